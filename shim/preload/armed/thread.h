/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * thread.h - a thread of the shim's own in an armed process (thread.c):
 * the timer and the orders' reader of trigger.c, learning's flusher.
 */
#ifndef PMALLOC_THREAD_H
#define PMALLOC_THREAD_H

#include <stdbool.h>
#include <stddef.h>

/* Start fn on a detached thread named name, with a stack of stack bytes
 * and every signal blocked but those the fault handler must see; false
 * when it could not start (no pthread_create of libc's, or refused: a
 * process whose RLIMIT_NPROC is 0). */
bool shim_thread_start(void *(*fn)(void *), const char *name, size_t stack);

#endif
