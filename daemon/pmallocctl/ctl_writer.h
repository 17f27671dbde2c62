/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ctl_writer.h - who wrote, from an audit-mode violation entry (ctl_writer.c). */
#ifndef PMALLOC_CTL_WRITER_H
#define PMALLOC_CTL_WRITER_H

#include <stdbool.h>
#include <stddef.h>

/* The function of exe that wrote, from a violation entry's
 * PMALLOC_BACKTRACE and PMALLOC_FAULT_SYMBOL ("" when absent): its first
 * frame in exe, with the store's own function when another's
 * ("cache_set+0x34 (the store in __vsnprintf_internal+0x8f)"); else the
 * fault symbol; into out (cut to len). */
void ctl_audit_writer(const char *backtrace, const char *exe, const char *fault_symbol, char *out, size_t len);
/* Is every frame of exe in backtrace of build build_id (hex; the
 * "[BUILD-ID]" the frame carries)?  True when none is of exe. */
bool ctl_audit_exe_build(const char *backtrace, const char *exe, const char *build_id);

#endif
