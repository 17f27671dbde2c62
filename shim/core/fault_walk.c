/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fault_walk.c - the enrichment after a violation's stderr line: the
 * faulting thread's stack walked (libgcc's unwinder) into the report's
 * frames, with SIGSEGV unblocked and a jump back for a fault inside the
 * walk (a corrupt frame chain), and only when the stack has room for it
 * (a small alternate stack).  fault_walk_fault() (fault_inner.h) is the
 * handler's side of that jump.
 *
 * Must never: run before the report line is written (report.c calls it
 * through report_end), allocate, take a lock, or jump to a record that
 * the secret's seal does not vouch for.  Async-signal-safe.
 */
#define _GNU_SOURCE
#include "os.h"
#include "fault_inner.h"

#include <setjmp.h>
#include <signal.h>
#include <sys/auxv.h>
#include <unwind.h>

__thread uintptr_t fault_walk_env __attribute__((tls_model("initial-exec")));

/* Stack the walk needs: libgcc's unwinder took 4.6 KiB more than the
 * report alone (measured on x86-64: 8.6 KiB of an alternate stack used
 * with the walk, 4.0 KiB without, kernel frame included); kept generous,
 * plus room for the kernel's frame of a nested fault inside it. */
#define WALK_STACK 8192u
#define WALK_STEPS 64            /* frames visited at most, handler's included */
static size_t sigframe_bytes = 4096;  /* AT_MINSIGSTKSZ where the kernel says */

void fault_walk_init(void)
{
	unsigned long minsig = getauxval(AT_MINSIGSTKSZ);
	if (minsig > sigframe_bytes)
		sigframe_bytes = minsig;
}

struct unwind_state {
	struct pmw_report *r;
	bool started;
	int steps;
};

static _Unwind_Reason_Code unwind_step(struct _Unwind_Context *ctx, void *arg)
{
	struct unwind_state *st = arg;
	uintptr_t ip = (uintptr_t)_Unwind_GetIP(ctx);
	if (ip == 0 || ++st->steps > WALK_STEPS)
		return _URC_END_OF_STACK;
	/* Skip the handler's own frames: start at the faulting instruction. */
	if (!st->started) {
		if (ip != st->r->fault_ip)
			return _URC_NO_REASON;
		st->started = true;
		return _URC_NO_REASON;     /* frames[0] is already ip */
	}
	if (st->r->n_frames >= PMW_FRAMES)
		return _URC_END_OF_STACK;
	st->r->frames[st->r->n_frames++].ip = ip;
	return _URC_NO_REASON;
}

/* Is there room for the walk below here?  On an alternate stack, its size
 * bounds it (a small one is common: 2-8 KiB); a thread's own stack is
 * taken to have room, as the faulting code had. */
static bool room_to_walk(void)
{
	stack_t ss;
	if (os_altstack(&ss) < 0 || !(ss.ss_flags & SS_ONSTACK))
		return true;
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0), low = (uintptr_t)ss.ss_sp;
	return sp > low && sp - low >= WALK_STACK + sigframe_bytes;
}

/* The enrichment after the stderr line: the stack walk.  It reads the
 * program's stack through frame records that may be corrupt; a fault
 * inside it (SIGSEGV unblocked for the walk only) ends the walk with the
 * frames found so far, never the report.  Such faults come from reading
 * the stack at a bad CFA, outside libgcc's FDE look-up (lock-free through
 * _dl_find_object here), so jumping out leaves no lock held. */
void fault_walk_backtrace(struct pmw_report *r, void *arg)
{
	(void)arg;
	if (!room_to_walk())
		return;
	struct unwind_state st = { .r = r };
	sigset_t segv, old;
	sigemptyset(&segv);
	sigaddset(&segv, SIGSEGV);
	struct walk_jump jump;
	jump.seal = (uintptr_t)&jump ^ os_secret ^ WALK_SEAL_TAG;
	os_sigmask(SIG_UNBLOCK, &segv, &old);
	if (sigsetjmp(jump.env, 0) == 0) {
		fault_walk_env = (uintptr_t)&jump ^ os_secret;
		_Unwind_Backtrace(unwind_step, &st);
	}
	fault_walk_env = 0;
	jump.seal = 0;
	os_sigmask(SIG_SETMASK, &old, NULL);
}
