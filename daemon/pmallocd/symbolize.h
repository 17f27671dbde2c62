/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * symbolize.h - module+offset -> symbol+offset, in the daemon (the shim
 * only sends raw addresses).  offset is an ELF virtual address of the
 * module: ip minus the module's load bias (link_map l_addr, dlpi_addr).
 */
#ifndef PMALLOCD_SYMBOLIZE_H
#define PMALLOCD_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SYM_CACHE 32                     /* modules kept open */
#define SYM_FILE_MAX (1024LL * 1024 * 1024)  /* a module file owned by root */
#define SYM_USER_FILE_MAX (256LL * 1024 * 1024)  /* one owned by another user */
/* What libdwfl reads of a module to name its symbols: the symbol tables,
 * their strings and section indexes, the notes (build-id), the debug link.
 * Its look-up walks every symbol, so this bounds both the memory a module
 * costs and the time of one look-up.  A file claiming more is not
 * symbolized (its frames are shown as module+offset). */
#define SYM_TABLES_MAX (4LL * 1024 * 1024)
#define SYM_MODULE_BASE (64 * 1024)      /* a module's cost beyond its tables */
#define SYM_CACHE_BYTES (64LL * 1024 * 1024)  /* all cached modules' costs */
#define SYM_OWNER_BYTES (16LL * 1024 * 1024)  /* those of files of one owner but root */

struct symbolizer;
struct sym_module;

/* Also drops the process's supplementary groups (before the sandbox and
 * the threads): symbolizer_open() opens files with a reporter's uid and
 * gid alone, and opens none of another uid's when they cannot be dropped. */
int symbolizer_new(struct symbolizer **ret);
void symbolizer_free(struct symbolizer *s);

/* One report's modules: those opened from here on are kept (never evicted
 * for the bounds above) until the next call. */
void symbolizer_begin(struct symbolizer *s);

/* The module at path (absolute), for a process running as uid and gid.
 * The file is opened with uid and gid as file-system ids (setfsuid(2)):
 * -EACCES when that process could not read it, or when the file is owned
 * by neither root nor uid (a client cannot make pmallocd read another
 * user's files); -EPERM when pmallocd cannot take those ids or drop its
 * groups (it lacks CAP_SETUID, CAP_SETGID) and uid is not root's; -EFBIG when the file or
 * what libdwfl would read of it is over the limits above; -ESTALE when
 * build_id is given and the file's differs (replaced since); -ENOEXEC when
 * not ELF; -ENOBUFS when the modules of this report (symbolizer_begin)
 * fill the bounds already.  The module stays valid until the next
 * symbolizer_begin(). */
int symbolizer_open(struct symbolizer *s, const char *path, const uint8_t *build_id,
		    size_t build_id_len, uid_t uid, gid_t gid, struct sym_module **ret);

/* Bytes held by the cache now (the costs above), for status. */
uint64_t symbolizer_bytes(const struct symbolizer *s);

/* "symbol+0xoff" for offset into mod, the name escaped (escape.h: it comes
 * from a file a user may own); -ENOENT when no symbol covers it. */
int sym_module_lookup(struct sym_module *mod, uint64_t offset, char *buf, size_t size);
/* The file's build-id (NULL, 0 when it has none). */
const uint8_t *sym_module_build_id(const struct sym_module *mod, size_t *ret_len);

#endif
