/*
 * sandbox.h - confinement of pmallocd after init.
 */
#ifndef PMALLOCD_SANDBOX_H
#define PMALLOCD_SANDBOX_H

/* PR_SET_NO_NEW_PRIVS, then a seccomp allow-list: any other system call
 * kills the process (SIGSYS).  0 or -errno.  Irreversible. */
int sandbox_apply(void);

#endif
