/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_vio.h - the pieces of "pmallocctl violations": a journal entry as the
 * command holds it (ctl_violations.c reads it), who wrote it and how it is
 * shown (ctl_vio_show.c), and the fault's symbol looked up from the module
 * file when no daemon named it (ctl_elfsym.c).
 */
#ifndef PMALLOC_CTL_VIO_H
#define PMALLOC_CTL_VIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One field of an entry, copied out of the journal (whose pointers live
 * only until the next call). */
struct vio_field {
	char *name;
	char *value;                 /* value[len] is NUL, but value may hold NULs too */
	size_t len;
};

struct vio_entry {
	uint64_t usec;
	char *cursor;                /* sd_journal_get_cursor()'s; NULL unknown */
	struct vio_field *fields;    /* sorted by name; the first occurrence of each */
	size_t n_fields;
};

/* The field name of e, or NULL. */
const struct vio_field *vio_get(const struct vio_entry *e, const char *name);

/* Who wrote e, by the fields journald sets itself (_PID, _UID, _COMM,
 * _EXE, _SYSTEMD_UNIT: no process can forge them): pmallocd (root's
 * process named pmallocd or of pmallocd.service), the process the entry is about (_PID is OBJECT_PID: the shim
 * inside it, when no daemon runs), or anybody else: forged. */
enum vio_writer { VIO_BY_PMALLOCD, VIO_BY_SELF, VIO_FORGED };
enum vio_writer vio_writer(const struct vio_entry *e);

/* Was an entry with these fields of journald's pmallocd's (violations and
 * sites both ask this)?  uid, comm, exe, unit: _UID, _COMM, _EXE,
 * _SYSTEMD_UNIT as plain strings, NULL when absent (or holding a NUL).
 * Root's process named pmallocd (comm, or exe's last component), or root's
 * process of pmallocd.service whatever its name. */
bool vio_by_pmallocd(const char *uid, const char *comm, const char *exe, const char *unit);

enum vio_output { VIO_SHORT, VIO_JSON, VIO_JSON_PRETTY, VIO_CAT };

struct vio_show_opts {
	enum vio_output output;
	bool host;                   /* the HOST column (collected journals) */
	size_t columns;              /* the table's width; 0: no limit (--full, or not a terminal) */
};

struct vio_show;
int vio_show_new(const struct vio_show_opts *o, struct vio_show **ret);
/* e to f (json, cat) or into the table (short); 0 or -ENOMEM. */
int vio_show_entry(struct vio_show *s, FILE *f, const struct vio_entry *e);
/* The table's rows held (after its header when header is set) to f, then
 * forgotten; the column widths stay for the rows --follow adds. */
void vio_show_flush(struct vio_show *s, FILE *f, bool header);
void vio_show_free(struct vio_show *s);

/* ctl_elfsym.c: "function+0xOFF" for offset (an ELF virtual address) in
 * the module file at path, read with the caller's rights and only when
 * process owner uid could read it too (owned by root or uid, and readable
 * by others or by uid): 0 and *ret (malloc'ed, escaped), -ESTALE when
 * build_id (hex, or NULL) is not the file's, -EACCES not uid's to read,
 * -ENOENT no function covers it, -EFBIG too large a file, or the error
 * opening it. */
int ctl_elf_symbol(const char *path, const char *build_id, uint64_t offset, unsigned int uid, char **ret);

#endif
