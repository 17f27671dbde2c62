/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * learn_inner.h - what learn.c (the contexts) lends learn_flush.c (their
 * journal entries): a context's record and the table.  Included by those
 * two files only; learn.c never calls the flush.
 */
#ifndef PMALLOC_LEARN_INNER_H
#define PMALLOC_LEARN_INNER_H

#include "learn.h"

#include <stdint.h>

struct lctx {
	uint64_t hash;
	uintptr_t frames[LEARN_FRAMES];
	uint8_t n_frames;
	uint8_t pool;
	int16_t lane;                      /* the lane it used last (learn_lock) */
	uint16_t site;                     /* the site routing charged (wrappers looked through) */
	uint8_t takes;                     /* shared lanes taken, each on a fresh page (learn_lock) */
	_Atomic uint64_t objects, bytes;   /* before the pool's first trigger */
	_Atomic uint64_t freed_objects, freed_bytes;   /* before the trigger or after */
	_Atomic uint64_t early_objects, early_bytes;   /* of those, before the pool's first trigger */
	_Atomic uint64_t late_objects, late_bytes;
	_Atomic uint64_t written_bytes;    /* live bytes at the first mark */
	_Atomic uint8_t written;
	/* The reload window (reload_count()) that last let a write into it
	 * through; 0: none (learn_window_let_through). */
	_Atomic uint32_t window;
	/* Frees the main thread made in reload window win_free (counted as
	 * freed before the trigger once that window ended: learn_early). */
	_Atomic uint32_t win_free;
	_Atomic uint64_t win_objects, win_bytes;
	/* What the journal has of it (flush_lock): its counts as last sent,
	 * in flush epoch sent_epoch (a forked child starts a new epoch: its
	 * entries are its own, all sent again). */
	uint32_t sent_epoch;
	uint8_t sent_written;
	uint16_t own;                      /* its lane of its own, 1.. (0: none; learn_lock) */
	uint32_t next;                     /* the next context of its hash bucket (learn_lock) */
	uint64_t sent_objects, sent_freed, sent_late;
};

/* The armed state learning runs for (NULL: not learning). */
const struct shim_state *learn_state(void);
/* The context table, ids 1..*ret_n-1 (acquire: each is complete). */
struct lctx *learn_contexts(uint32_t *ret_n);
/* Allocations no context could take (the table full). */
uint64_t learn_lost(void);
/* How many contexts have been marked written so far: a count that moves
 * when a mark is new (learn_flush.c sends new marks before the program
 * waits).  One load. */
uint64_t learn_marks(void);
/* The process ends (the exit flush) with a reload window still open: the
 * contexts that window let writes into are marked written now (learn.c
 * says why).  Normal context. */
void learn_window_unfinished(void);
/* Context x's frees counted as made before its pool's trigger (the
 * start-up objects the program was done with, and the old configuration
 * a reload window freed, once that window ended; exec: the process is
 * about to exec, which ends its window).  Any thread. */
void learn_early(const struct lctx *x, bool exec, uint64_t *objects, uint64_t *bytes);

#endif
