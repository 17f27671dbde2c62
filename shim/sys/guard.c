/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * guard.c - the storage of the re-entrancy guard (guard.h); its token's
 * secret is os.h's.  Nothing else: the guard is read and set only
 * through guard.h's inline functions.
 */
#include "guard.h"

__thread uintptr_t shim_busy __attribute__((tls_model("initial-exec")));
