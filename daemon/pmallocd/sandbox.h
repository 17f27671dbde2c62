/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sandbox.h - confinement of pmallocd after init.
 */
#ifndef PMALLOCD_SANDBOX_H
#define PMALLOCD_SANDBOX_H

/* PR_SET_NO_NEW_PRIVS, then a seccomp allow-list: any other system call
 * kills the process (SIGSYS).  journal_fd (jwriter_fd(), or -1) is the one
 * descriptor connect() is allowed on.  0 or -errno.  Irreversible. */
int sandbox_apply(int journal_fd);

#endif
