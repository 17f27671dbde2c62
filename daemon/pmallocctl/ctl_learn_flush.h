/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl_learn_flush.h - the learn-flush request, shared with sites (ctl_learn_flush.c),
 * for the pmallocctl files that use it.
 */
#ifndef PMALLOC_CTL_LEARN_FLUSH_H
#define PMALLOC_CTL_LEARN_FLUSH_H

#include <stdint.h>

/* ctl_learn_flush.c: the command line of learn-flush and sites (NAME PID
 * [--socket PATH]) and the learn-flush request to pmallocd: -1 with
 * *ret_pid and *ret_text (pmallocd's answer, as ctl_request()), else the
 * exit status to return (help given, or the error said on stderr). */
int ctl_learn_flush_ask(int argc, char **argv, const char *name, int32_t *ret_pid, char **ret_text);

#endif
