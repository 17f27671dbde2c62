/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * identify.c - the worker thread that reads who a client is, and its two
 * queues.
 *
 * Owns: the worker (one thread, started before the sandbox, joined at
 * exit), a fixed array of IDENTIFY_QUEUE jobs, the queue of jobs to do and
 * the queue of jobs done, the lock over both, and the eventfd that wakes
 * the loop when jobs are done.
 * Never (the worker): touches anything but the job it holds and the two
 * queues - no client, registry, config, sd-event, journal or log state
 * (none of them is thread-safe); allocates (its arena would need calls the
 * sandbox refuses); reads, writes or closes the client's socket (it asks
 * it for the peer's pidfd, nothing else; the loop keeps it open until the
 * job is back); blocks on anything but the lock and its condition
 * variable.  Never (both): makes a system call holding the lock (but the
 * futex calls of the lock and the condition variable themselves).
 *
 * Why a thread: a hand-out costs pmallocd ~50 us of CPU, nearly all in the
 * kernel, of which the identification below was about half (SO_PEERPIDFD
 * and its close 4.9 us, readlink exe 3.1, PIDFD_GET_INFO 1.2; comm 5.3
 * unless the HELLO says it; once per cgroup (cgroup_cache.c) the cgroup,
 * 8.9 with ten v1 hierarchies); one thread doing all of it
 * tops out near 19,000 hand-outs/s while the second core idles.
 * Costs of the hand-over: a lock and an unlock per job each way (a futex
 * call only when contended), one futex wake-up per job that finds the
 * worker asleep, one eventfd write per batch of results (only when the
 * loop has not been told already) and one eventfd read per batch taken.
 * Under the bench's 64 clients (tests/bench/daemon, perf trace): the
 * worker slept about once per 100 jobs, the eventfd was written about once
 * per 3.
 * An idle daemon does without it: a HELLO alone in its batch, with the
 * worker waiting, is identified by the loop itself (server.c), since the
 * hand-over costs such a client more than the reads (the worker's wake-up
 * on the other core, its eventfd write, the loop's turn to read it: 35 us
 * of /bin/true's start-up on the VM of doc/figures.md, and 45 us of the
 * daemon's CPU, 148 -> 103 us a hand-out, 7.0 -> 4.9 context switches).
 * No cache of identities: what is read here is read for every client.  A
 * key the kernel vouches for would have to survive exec, which keeps the
 * pid and its start time and changes the program (a process that connects
 * again after exec'ing a setuid program, or any other, must be named by
 * its new exe, never by the one it had); the exe's inode and device are
 * read through the same /proc/PID/exe walk as its path, at the same cost.
 * Only what follows from the values read is kept: a cgroup's path by the
 * id PIDFD_GET_INFO gives (cgroup_cache.c), the policy an (exe, comm,
 * uid) matched (match_cache.c).
 */
#define _GNU_SOURCE
#include "identify.h"
#include "cgroup_cache.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define IDENTIFY_STACK (256 * 1024)

struct identify {
	pthread_t thread;
	int efd;                         /* readable: jobs done */
	struct identify_job *jobs;       /* IDENTIFY_QUEUE of them */
	struct identify_job *free;       /* the loop's alone: no lock */

	pthread_mutex_t lock;            /* over what follows */
	pthread_cond_t wake;             /* the worker waits on it */
	struct identify_job *todo, *todo_tail;
	struct identify_job *done, *done_tail;
	bool asleep;                     /* the worker waits: a submit wakes it */
	bool told;                       /* the eventfd was written since the last take */
	bool started;                    /* the worker made its start-up calls */
	bool stop;
};

void identify_run(struct identify_job *j)
{
	uint64_t cgid = 0, again = 0;
	int pidfd, ids, r;
	bool unified;

	j->exe_deleted = false;
	j->exe[0] = j->cgroup[0] = '\0';
	if (!j->comm_given)
		j->comm[0] = '\0';
	/* The pidfd (where the kernel has SO_PEERPIDFD) pins the process that
	 * connected: if it still runs after the /proc reads, they were its,
	 * not those of a process that reused its pid. */
	pidfd = proc_peer_pidfd(j->fd);
	r = proc_read_exe_into(j->pid, j->exe, sizeof(j->exe), &j->exe_deleted);
	if (r >= 0 && !j->comm_given)
		r = proc_read_comm(j->pid, j->comm);
	/* The ids from the pidfd where the kernel tells them (PIDFD_GET_INFO):
	 * it answers only while the process is not reaped, that is while its
	 * pid is not free for reuse, so the reads above were its.  Else from
	 * /proc/PID/status, and the pidfd's poll() proves the same. */
	ids = r >= 0 && pidfd >= 0 ? proc_pidfd_ids(pidfd, j->uids, j->gids, &cgid) : -EOPNOTSUPP;
	if (r >= 0 && ids == -EOPNOTSUPP) {
		/* systemd's view as it connects (journal fields); optional. */
		if (proc_read_cgroup(j->pid, j->cgroup, sizeof(j->cgroup), NULL) < 0)
			j->cgroup[0] = '\0';
		r = proc_read_ids(j->pid, j->uids, j->gids);
		if (r >= 0 && pidfd >= 0 && proc_pidfd_exited(pidfd) != 0)
			r = -ESRCH;
	} else if (r >= 0 && ids >= 0 && !cgroup_cache_get(cgid, j->cgroup, sizeof(j->cgroup))) {
		/* The cgroup's path once per cgroup (cgroup_cache.c): read,
		 * then GET_INFO again, which proves the read was the peer's and
		 * of the cgroup the id names. */
		if (proc_read_cgroup(j->pid, j->cgroup, sizeof(j->cgroup), &unified) < 0) {
			j->cgroup[0] = '\0';
			unified = false;
		}
		r = proc_pidfd_ids(pidfd, j->uids, j->gids, &again);
		if (r >= 0 && unified && again == cgid)
			cgroup_cache_put(cgid, j->cgroup);
	} else if (r >= 0)
		r = ids;
	j->seen = proc_boottime_ticks();  /* pid was the peer's until now */
	if (pidfd >= 0)
		close(pidfd);
	j->r = r;
}

static void *worker(void *arg)
{
	struct identify *q = arg;

	pthread_mutex_lock(&q->lock);
	q->started = true;
	pthread_cond_broadcast(&q->wake);
	for (;;) {
		struct identify_job *j;
		bool tell;

		while (!q->todo && !q->stop) {
			q->asleep = true;
			pthread_cond_wait(&q->wake, &q->lock);
		}
		q->asleep = false;
		if (q->stop)
			break;
		j = q->todo;
		q->todo = j->next;
		if (!q->todo)
			q->todo_tail = NULL;
		pthread_mutex_unlock(&q->lock);

		identify_run(j);

		pthread_mutex_lock(&q->lock);
		j->next = NULL;
		if (q->done_tail)
			q->done_tail->next = j;
		else
			q->done = j;
		q->done_tail = j;
		tell = !q->told;
		q->told = true;
		if (tell) {
			uint64_t one = 1;

			pthread_mutex_unlock(&q->lock);
			/* Cannot fail but on overflow, which a pending count
			 * already wakes the loop for. */
			(void)!write(q->efd, &one, sizeof(one));
			pthread_mutex_lock(&q->lock);
		}
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

int identify_start(struct identify **ret)
{
	struct identify *q = calloc(1, sizeof(*q));
	pthread_attr_t attr;
	sigset_t all, old;
	int r;

	cgroup_cache_init();             /* statfs: before the sandbox */
	if (!q)
		return -ENOMEM;
	q->jobs = calloc(IDENTIFY_QUEUE, sizeof(*q->jobs));
	q->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!q->jobs || q->efd < 0) {
		r = q->jobs ? -errno : -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < IDENTIFY_QUEUE; i++) {
		q->jobs[i].next = q->free;
		q->free = &q->jobs[i];
	}
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->wake, NULL);
	(void)proc_boottime_ticks();     /* its cached clock rate, set before the worker reads it */

	/* Signals are the loop's (signalfd): the worker takes none.  Its
	 * stack: a few pages are used (the jobs hold the buffers). */
	sigfillset(&all);
	pthread_attr_init(&attr);
	(void)pthread_attr_setstacksize(&attr, IDENTIFY_STACK);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = -pthread_create(&q->thread, &attr, worker, q);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (r < 0) {
		pthread_cond_destroy(&q->wake);
		pthread_mutex_destroy(&q->lock);
		goto fail;
	}
	/* Its start-up calls (rseq, robust list, signal mask) come before
	 * the sandbox, which allows none of them. */
	pthread_mutex_lock(&q->lock);
	while (!q->started)
		pthread_cond_wait(&q->wake, &q->lock);
	pthread_mutex_unlock(&q->lock);
	*ret = q;
	return 0;
fail:
	if (q->efd >= 0)
		close(q->efd);
	free(q->jobs);
	free(q);
	return r;
}

void identify_stop(struct identify *q)
{
	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	q->stop = true;
	pthread_mutex_unlock(&q->lock);
	pthread_cond_signal(&q->wake);
	pthread_join(q->thread, NULL);
	pthread_cond_destroy(&q->wake);
	pthread_mutex_destroy(&q->lock);
	close(q->efd);
	free(q->jobs);
	free(q);
}

int identify_fd(const struct identify *q)
{
	return q->efd;
}

struct identify_job *identify_job_get(struct identify *q)
{
	struct identify_job *j = q ? q->free : NULL;

	if (j) {
		q->free = j->next;
		j->next = NULL;
	}
	return j;
}

void identify_job_put(struct identify *q, struct identify_job *j)
{
	j->owner = NULL;
	j->fd = -1;
	j->comm_given = false;
	j->next = q->free;
	q->free = j;
}

void identify_submit(struct identify *q, struct identify_job *j)
{
	bool wake;

	j->next = NULL;
	pthread_mutex_lock(&q->lock);
	if (q->todo_tail)
		q->todo_tail->next = j;
	else
		q->todo = j;
	q->todo_tail = j;
	wake = q->asleep;
	q->asleep = false;               /* one wake-up is enough */
	pthread_mutex_unlock(&q->lock);
	if (wake)
		pthread_cond_signal(&q->wake);
}

bool identify_idle(struct identify *q)
{
	bool idle;

	if (!q)
		return true;
	pthread_mutex_lock(&q->lock);
	idle = q->asleep && !q->todo;
	pthread_mutex_unlock(&q->lock);
	return idle;
}

struct identify_job *identify_take(struct identify *q, bool woken)
{
	struct identify_job *list;
	uint64_t n;
	bool reset = woken;

	if (!q)
		return NULL;
	if (!reset) {
		pthread_mutex_lock(&q->lock);
		reset = q->told;
		pthread_mutex_unlock(&q->lock);
	}
	/* The eventfd is reset first, then the list taken: a result queued
	 * before the lock below is in the list, one queued after it finds
	 * told false and writes the eventfd again (a write of one taken
	 * already just wakes the loop once for nothing).  Reset after the
	 * take, the read could swallow the write of a result queued between
	 * the unlock and the read: told stayed true, no later result wrote
	 * again, and the loop slept on answers it had - clients at the end of
	 * a burst went unanswered. */
	if (reset)
		(void)!read(q->efd, &n, sizeof(n));
	pthread_mutex_lock(&q->lock);
	list = q->done;
	q->done = q->done_tail = NULL;
	if (reset)
		q->told = false;
	pthread_mutex_unlock(&q->lock);
	return list;
}
