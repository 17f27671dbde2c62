/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_buildid.h - an ELF file's GNU build-id (ctl_buildid.c),
 * for the pmallocctl files that use it.
 */
#ifndef PMALLOC_CTL_BUILDID_H
#define PMALLOC_CTL_BUILDID_H

#include <stddef.h>

/* ctl_buildid.c: the GNU build-id of the ELF file path as lower-case hex
 * ("" when it has none); 0, -ENOEXEC when not an ELF file, -errno. */
int ctl_file_build_id(const char *path, char *hex, size_t hexlen);

#endif
