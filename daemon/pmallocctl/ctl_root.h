/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_root.h - files beneath a system root (ctl_root.c),
 * for the pmallocctl files that use it.
 */
#ifndef PMALLOC_CTL_ROOT_H
#define PMALLOC_CTL_ROOT_H

#include <stdio.h>
#include <sys/types.h>

/* ctl_root.c: files beneath a system root (see there).  The root's
 * directory ("" for /) as an O_PATH descriptor: 0 and *ret_fd, or -errno. */
int ctl_root_open(const char *dir, int *ret_fd);
/* openat2(root_fd, path, flags, mode) with RESOLVE_IN_ROOT: path (leading
 * slashes ignored; "" is the root) never resolves outside the root.  0 and
 * *ret_fd, or -errno (-ENOSYS: the kernel has no openat2). */
int ctl_root_openat(int root_fd, const char *path, int flags, mode_t mode, int *ret_fd);
/* mkdir -p of path beneath the root: 0 and *ret_fd (O_PATH, the last
 * directory), or -errno. */
int ctl_root_mkdirs(int root_fd, const char *path, int *ret_fd);
/* A file beneath the root for reading: 0 and *ret, or -errno. */
int ctl_root_fopen(int root_fd, const char *path, FILE **ret);

#endif
