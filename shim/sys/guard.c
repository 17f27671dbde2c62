/*
 * guard.c - the storage of the re-entrancy guard (guard.h).  Nothing else:
 * the guard is read and set only through guard.h's inline functions.
 */
#include "guard.h"

__thread int shim_busy __attribute__((tls_model("initial-exec")));
