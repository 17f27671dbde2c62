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
#define SYM_FILE_MAX (1024LL * 1024 * 1024)

struct symbolizer;
struct sym_module;

int symbolizer_new(struct symbolizer **ret);
void symbolizer_free(struct symbolizer *s);

/* The module at path (absolute), for a process running as uid.  Refused
 * with -EACCES unless the file is owned by root or by uid (a client cannot
 * make pmallocd read another user's files), -ESTALE when build_id is given
 * and the file's differs (replaced since), -ENOEXEC when not ELF.  The
 * module stays valid until SYM_CACHE other modules have been opened. */
int symbolizer_open(struct symbolizer *s, const char *path, const uint8_t *build_id,
		    size_t build_id_len, uid_t uid, struct sym_module **ret);

/* "symbol+0xoff" for offset into mod, the name escaped (escape.h: it comes
 * from a file a user may own); -ENOENT when no symbol covers it. */
int sym_module_lookup(struct sym_module *mod, uint64_t offset, char *buf, size_t size);
/* The file's build-id (NULL, 0 when it has none). */
const uint8_t *sym_module_build_id(const struct sym_module *mod, size_t *ret_len);

#endif
