/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * api_tamper_reload - a victim that parses its configuration (malloc and
 * strdup from parse_config, a site of the policy's pool "config"), is
 * protected at on-call:poll, then "reloads" it: allocates it again from
 * the same site, calls poll() (the next trigger) and writes into the
 * reloaded copy, first through the kernel (read(2)), then itself.  Before
 * the reload one word of the shim's writable memory is overwritten, one
 * forked run per word and value.  Each run must end one of two ways:
 *
 *   protected    the store into the reloaded copy killed it (SIGSEGV) with
 *                the shim's report on stderr, the kernel's write refused;
 *   reported     it died earlier, with a line of the shim's on stderr (a
 *                check that found the tampered word: "pmalloc: fatal ...").
 *
 * and never: the store let through, the kernel's write let through, the
 * program's own SIGSEGV handler run for a fault in the configuration, a
 * hang, a death at the store without the shim's report.  A run may also
 * die before the store, without a report, the program's handler run for
 * a fault elsewhere (the tampered word was a pointer the shim or libc
 * followed: a cached libc function, say): counted apart ("crashed"), and
 * listed by the sweep; the process ends before anything is written.
 *
 *   api_tamper_reload sweep [N]  every word (N > 0: N words spread over the
 *                                list), each set to 0, 1, all-ones, the
 *                                address of a page of this program's
 *                                (attacker memory, filled with 1 in either
 *                                half of each word), 2, 3, 1 << 32, the
 *                                guard's token as an attacker makes it, a
 *                                pointer to a copy in her memory of what the
 *                                word points to, the value there moved by
 *                                one, with either half cleared, and up to 3
 *                                values the shim itself kept there in other
 *                                states (collect_states); TAMPER_SHARD=K/M
 *                                takes every M-th word from the K-th
 *   api_tamper_reload row shim+0xOFF=VALUE | TLS+0xOFF=VALUE   one word
 *                                as the sweep names a failure, tried alone
 *   api_tamper_reload row NAME   one row of the table: the word(s)
 *                                named, written as an attacker would; a
 *                                word found read-only is "refused"
 *
 * Targets of the sweep, found at run time:
 *   - the shim's writable PT_LOAD segment outside RELRO (.data, .bss);
 *   - the shim's thread-local block (this thread's);
 *   - resident pages of anonymous private writable mappings that are no
 *     object's .bss tail, not the thread's static TLS (beyond the shim's
 *     block), not pool memory (the arena): the metadata the shim maps
 *     (site table, span tables and records, pool structs).
 *
 * TAMPER_JOURNAL=1 (tamper.sh's private namespace): the program plays
 * journald (a socket at its path) and a run the shim killed must have sent
 * its violation entry there.  TAMPER_VERBOSE=1: each run's stderr.
 *
 * Prints per-outcome counts, "api_tamper_reload: ... all held" and exits
 * 0, else one line per failing run and exits 1; 2 when it could not set
 * itself up.
 */
#define _GNU_SOURCE
#include <pmalloc.h>

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tamper.h"

#define POOL_MAGIC UINT64_C(0x706d616c6c6f6331)
#define POOL_STRUCT 512u
/* struct pmalloc_pool (shim/pool.h): magic, stamp, lock (40 bytes), then
 * first, last, partial, regions, ..., capped_used. */
#define POOL_OFF_STAMP 8
#define POOL_OFF_LOCK 16
#define POOL_OFF_FIRST 56
#define POOL_OFF_REGIONS 80
#define POOL_OFF_CAPPED_USED 144
/* struct pool_region: pool, stamp, cur, end. */
#define REGION_OFF_STAMP 8
#define REGION_OFF_CUR 16
#define REGION_OFF_END 24
#define REGION_SIZE 128
/* struct pool_thread: the slots (4 regions), then active. */
#define TLS_OFF_SLOTS 0
#define TLS_OFF_ACTIVE (4 * REGION_SIZE)
#define SPAN_SIZE 144
#define SPAN_OFF_BYTES 16
#define SPAN_OFF_FIRST_UNIT 96
#define SPAN_OFF_FREE_RUN 100
#define SPAN_OFF_CURSOR 24
#define MAX_TARGETS 65536
#define RUN_DEADLINE_S 20
#define ERR_MAX 4096

struct config {
	char *name;
	char *path;
	char *values[6];
	long port;
	char *big;                  /* rows next_unit, free_runs: a span of its own */
};

struct target {
	uintptr_t addr;
	int kind;
};
enum { K_DATA, K_TLS, K_META, K_KINDS };
static const char *const kind_names[] = { "shim .data/.bss", "shim TLS", "mapped metadata" };

static struct target *targets;
static size_t n_targets;
static unsigned counts[K_KINDS];

static uint64_t forged[512] __attribute__((aligned(4096)));
/* Attacker memory shaped like the structure a word points to (a pool
 * region for row active_region, a copy of what a pointer pointed to in the
 * sweep). */
static uint64_t shaped[1024] __attribute__((aligned(4096)));
static struct config *cfg;
static int errfd = -1;
/* Row settings: the reload allocates a large object too (a new span), the
 * stores go into the original configuration rather than the reloaded one. */
static bool big_alloc, store_original;
/* ... and the stores come before the next trigger (an after: trigger that
 * has not fired yet): nothing but the hand-out itself can notice. */
static bool no_trigger;
/* Did the last run's violation entry reach the fake journald? */
static bool last_journaled;
/* A write's value that stands for the address of the child's own
 * sigjmp_buf (row walk_env), known only in the child. */
#define JB_MARK UINT64_C(0x6a6d706275662121)
/* One that stands for the child's thread id in the word's low half. */
#define SELF_MARK UINT64_C(0x73656c6621212121)

/* ---- the victim ---- */

static __attribute__((noinline)) struct config *parse_config(const char *name)
{
	struct config *c = malloc(sizeof(*c));
	if (!c)
		return NULL;
	memset(c, 0, sizeof(*c));
	c->name = strdup(name);
	c->path = malloc(64);
	if (c->path)
		snprintf(c->path, 64, "/etc/%s.conf", name);
	for (int i = 0; i < 6; i++) {
		c->values[i] = malloc(48);
		if (c->values[i])
			snprintf(c->values[i], 48, "value %d of %s", i, name);
	}
	c->port = 8080;
	if (big_alloc)
		c->big = malloc(300u << 10);
	return c;
}
static __attribute__((noinline)) void parse_config_end(void)
{
	__asm__ volatile("");
}

static void trigger(void)
{
	poll(NULL, 0, 0);
}

/* The program's own SIGSEGV handler: says where, and whether that is the
 * configuration (the shim must never hand it a write there). */
static struct config *volatile reloaded;   /* the configuration the stores go into */

static bool in_config(uintptr_t a)
{
	struct config *c = reloaded;
	if (!c)
		return false;
	if (a - (uintptr_t)c < sizeof(*c) || (c->name && a - (uintptr_t)c->name < 16) ||
	    (c->path && a - (uintptr_t)c->path < 64))
		return true;
	for (int i = 0; i < 6; i++)
		if (c->values[i] && a - (uintptr_t)c->values[i] < 48)
			return true;
	return false;
}

struct stage {
	volatile int reached;       /* 1 tampered, 2 reloaded and triggered, 3 the kernel's write
				     * tried, 4 the store survived */
	volatile int kernel_wrote;
	volatile int handler;       /* 1 program's handler, outside the configuration; 2 inside */
	volatile uintptr_t fault_addr;
};
static struct stage *st;

static void program_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	uintptr_t a = (uintptr_t)si->si_addr;
	st->fault_addr = a;
	st->handler = in_config(a) ? 2 : 1;
	_exit(4);
}

/* ---- finding the targets ---- */

/* The address of the shim's symbol name (its thread's copy for a TLS
 * one), from its symbol table; 0 when not found. */
static uintptr_t shim_symbol(const char *name)
{
	int fd = open(seg.path, O_RDONLY | O_CLOEXEC);
	struct stat sb;
	uintptr_t at = 0;
	if (fd < 0 || fstat(fd, &sb) < 0)
		return 0;
	const unsigned char *f = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (f == MAP_FAILED)
		return 0;
	const ElfW(Ehdr) *eh = (const void *)f;
	const ElfW(Shdr) *sh = (const void *)(f + eh->e_shoff);
	for (int i = 0; i < eh->e_shnum && !at; i++) {
		if (sh[i].sh_type != SHT_SYMTAB)
			continue;
		const ElfW(Sym) *sym = (const void *)(f + sh[i].sh_offset);
		const char *str = (const char *)f + sh[sh[i].sh_link].sh_offset;
		for (size_t k = 0; k < sh[i].sh_size / sizeof(*sym); k++)
			if (strcmp(str + sym[k].st_name, name) == 0 && sym[k].st_shndx != SHN_UNDEF) {
				at = ELF64_ST_TYPE(sym[k].st_info) == STT_TLS ? seg.tls + sym[k].st_value
									    : seg.base + sym[k].st_value;
				break;
			}
	}
	munmap((void *)f, (size_t)sb.st_size);
	return at;
}

struct map {
	uintptr_t lo, hi;
	char perms[8];
	bool named;
};
static struct map maps[1024];
static size_t n_maps;

static void read_maps(void)
{
	FILE *m = fopen("/proc/self/maps", "re");
	char line[1024];
	n_maps = 0;
	while (m && n_maps < 1024 && fgets(line, sizeof(line), m)) {
		unsigned long lo, hi, ino;
		char path[512] = "";
		struct map *mp = &maps[n_maps];
		if (sscanf(line, "%lx-%lx %7s %*s %*s %lu %511s", &lo, &hi, mp->perms, &ino, path) < 4)
			continue;
		mp->lo = lo;
		mp->hi = hi;
		mp->named = ino != 0 || path[0];
		n_maps++;
	}
	if (m)
		fclose(m);
}

static bool writable(uintptr_t a)
{
	for (size_t i = 0; i < n_maps; i++)
		if (a >= maps[i].lo && a < maps[i].hi)
			return maps[i].perms[1] == 'w';
	return false;
}

static void add(uintptr_t addr, int kind)
{
	if (n_targets < MAX_TARGETS && writable(addr)) {
		targets[n_targets++] = (struct target){ addr & ~(uintptr_t)7, kind };
		counts[kind]++;
	}
}

static void add_targets(void)
{
	long page = sysconf(_SC_PAGESIZE);
	for (uintptr_t a = seg.lo; a + 8 <= seg.hi; a += 8)
		add(a, K_DATA);
	for (size_t off = 0; seg.tls && off + 8 <= seg.tls_len; off += 8)
		add(seg.tls + off, K_TLS);
	uintptr_t units_ro = shim_symbol("units_ro");
	uintptr_t arena_lo = units_ro ? ((uintptr_t *)units_ro)[0] : 0;
	uintptr_t arena_hi = arena_lo + (units_ro ? ((size_t *)units_ro)[1] : 0);
	for (size_t i = 0; i < n_maps; i++) {
		const struct map *mp = &maps[i];
		if (strcmp(mp->perms, "rw-p") != 0 || mp->named)
			continue;
		if (i > 0 && maps[i - 1].hi == mp->lo && maps[i - 1].named)
			continue;                       /* an object's .bss tail */
		if (mp->lo < arena_hi && arena_lo < mp->hi)
			continue;                       /* pool memory */
		if (mp->lo < seg.hi && seg.lo < mp->hi)
			continue;                       /* the shim's .bss, above */
		if (seg.tls >= mp->lo && seg.tls < mp->hi)
			continue;                       /* the static TLS: the shim's block is above */
		if ((uintptr_t)forged >= mp->lo && (uintptr_t)forged < mp->hi)
			continue;
		unsigned char vec[256];
		for (uintptr_t a = mp->lo; a < mp->hi; a += (uintptr_t)page * sizeof(vec)) {
			size_t len = mp->hi - a < (uintptr_t)page * sizeof(vec) ? mp->hi - a : (uintptr_t)page * sizeof(vec);
			if (mincore((void *)a, len, vec) < 0)
				continue;
			for (size_t p = 0; p < len / (size_t)page; p++)
				if (vec[p] & 1)
					for (size_t w = 0; w < (size_t)page; w += 8)
						add(a + p * (size_t)page + w, K_META);
		}
	}
}

/* ---- the values the shim itself stores (issue 27) ---- */

/* A word is also tried with the values the shim itself kept there in
 * another state than the one the runs start from (a token, a flag, an
 * index, a count): copies of every resident private writable page at the
 * start of main, once the configuration is parsed (armed, not yet
 * protected), and in a child after a reload and its protect; and samples
 * of every target word taken by a profiling timer in a child that
 * reloads and protects again and again (the shim's words caught between
 * two of their states: a lock held, a cursor moved, a guard set).  The
 * copies live in shared memory (rw-s: never copied themselves). */
#define SNAP_PAGES 16384u
#define SAMPLES 48u
#define SAMPLE_LOOPS 20000
#define STATE_VALUES 3u

struct snap {
	size_t n;
	uintptr_t *page;            /* sorted: maps are read in address order */
	unsigned char *data;
};
enum { S_START, S_ARMED, S_RELOADED, S_SNAPS };
static struct snap snaps[S_SNAPS];
static uint64_t (*state_vals)[STATE_VALUES];  /* per target */
static uint64_t *samples;                     /* SAMPLES rows of n_targets words */
static volatile unsigned *n_samples;

static void *shared(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		perror("api_tamper_reload: mmap");
		exit(2);
	}
	return p;
}

static void snap_take(struct snap *s)
{
	long page = sysconf(_SC_PAGESIZE);
	if (!s->page) {
		s->page = shared(SNAP_PAGES * sizeof(*s->page));
		s->data = shared((size_t)SNAP_PAGES * (size_t)page);
	}
	s->n = 0;
	read_maps();
	for (size_t i = 0; i < n_maps; i++) {
		if (strcmp(maps[i].perms, "rw-p") != 0)
			continue;
		for (uintptr_t a = maps[i].lo; a < maps[i].hi && s->n < SNAP_PAGES; a += (uintptr_t)page) {
			unsigned char vec;
			if (mincore((void *)a, (size_t)page, &vec) < 0 || !(vec & 1))
				continue;
			s->page[s->n] = a;
			memcpy(s->data + s->n * (size_t)page, (const void *)a, (size_t)page);
			s->n++;
		}
	}
}

static bool snap_value(const struct snap *s, uintptr_t a, uint64_t *v)
{
	uintptr_t pg = a & ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1);
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->page[mid] < pg)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == s->n || s->page[lo] != pg)
		return false;
	memcpy(v, s->data + lo * (size_t)sysconf(_SC_PAGESIZE) + (a - pg), sizeof(*v));
	return true;
}

static void on_sample(int sig)
{
	(void)sig;
	unsigned k = *n_samples;
	if (k >= SAMPLES)
		return;
	uint64_t *row = samples + (size_t)k * n_targets;
	for (size_t i = 0; i < n_targets; i++)
		row[i] = *(volatile uint64_t *)targets[i].addr;
	*n_samples = k + 1;
}

/* In a child: a reload and its protect, copied (S_RELOADED); then reloads
 * and protects sampled by the profiling timer. */
static void sample_states(void)
{
	snaps[S_RELOADED].page = shared(SNAP_PAGES * sizeof(uintptr_t));
	snaps[S_RELOADED].data = shared((size_t)SNAP_PAGES * (size_t)sysconf(_SC_PAGESIZE));
	samples = shared((size_t)SAMPLES * n_targets * sizeof(*samples));
	n_samples = shared(sizeof(*n_samples));
	size_t *reloaded_n = shared(sizeof(*reloaded_n));
	pid_t pid = fork();
	if (pid < 0) {
		perror("api_tamper_reload: fork");
		exit(2);
	}
	if (pid == 0) {
		alarm(RUN_DEADLINE_S);
		(void)parse_config("reloaded");
		trigger();
		snap_take(&snaps[S_RELOADED]);
		*reloaded_n = snaps[S_RELOADED].n;
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_sample;
		sa.sa_flags = SA_RESTART;
		sigaction(SIGPROF, &sa, NULL);
		struct itimerval every = { { 0, 100 }, { 0, 100 } };
		setitimer(ITIMER_PROF, &every, NULL);
		for (int i = 0; i < SAMPLE_LOOPS && *n_samples < SAMPLES; i++) {
			struct config *c = parse_config("sampled");
			trigger();
			if (c && i % 2)
				free(c->name);     /* a protected object freed: the shim's free path */
		}
		_exit(0);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	snaps[S_RELOADED].n = *reloaded_n;
}

/* Each target's values of other states: up to STATE_VALUES distinct ones,
 * none the value it holds now; the copies first, then the samples. */
static void collect_states(void)
{
	state_vals = shared(n_targets * sizeof(*state_vals));
	sample_states();
	unsigned ns = *n_samples;
	for (size_t i = 0; i < n_targets; i++) {
		uint64_t now = *(uint64_t *)targets[i].addr, v;
		unsigned got = 0;
		for (unsigned k = 0; k < S_SNAPS + ns && got < STATE_VALUES; k++) {
			if (k < S_SNAPS) {
				if (!snap_value(&snaps[k], targets[i].addr, &v))
					continue;
			} else {
				v = samples[(size_t)(k - S_SNAPS) * n_targets + i];
			}
			bool dup = v == now;
			for (unsigned j = 0; j < got && !dup; j++)
				dup = state_vals[i][j] == v;
			if (!dup)
				state_vals[i][got++] = v;
		}
		for (; got < STATE_VALUES; got++)
			state_vals[i][got] = now;             /* none: skipped as a no-op */
	}
}

/* ---- one run ---- */

enum outcome { O_PROTECTED, O_REPORTED, O_REFUSED, O_CRASHED, O_FAILED, O_OUTCOMES };
static const char *const outcome_names[] = { "protected at the next trigger", "died with a report",
					     "refused (read-only)", "crashed before the store, no report",
					     "FAILED" };

struct write {
	uintptr_t addr;
	uint64_t value;
	bool late;          /* written after the reload and its trigger, just before the stores */
};

static __attribute__((noinline)) void store(volatile char *p, char c)
{
	*p = c;
}

static void apply(const struct write *w, size_t n, bool late, sigjmp_buf *jb)
{
	for (size_t i = 0; i < n; i++)
		if (w[i].late == late)
			*(volatile uint64_t *)w[i].addr =
				w[i].value == JB_MARK ? (uintptr_t)jb :
				w[i].value == SELF_MARK ? (*(uint64_t *)w[i].addr & ~UINT64_C(0xffffffff)) | (uint32_t)getpid() :
				w[i].value;
}

static void child(const struct write *w, size_t n, int rfd)
{
	alarm(RUN_DEADLINE_S);         /* a run still alive then hangs: a failure */
	dup2(errfd, 2);
	/* The program's own jump buffer, on its stack: the shim's handler
	 * must never land here (exit 6). */
	sigjmp_buf jb;
	if (sigsetjmp(jb, 1))
		_exit(6);
	apply(w, n, false, &jb);
	st->reached = 1;
	struct config *c = parse_config("reloaded");
	reloaded = store_original ? cfg : c;
	if (!no_trigger)
		trigger();
	if (!c || !c->path || !c->values[0])
		_exit(5);
	c = reloaded;
	st->reached = 2;
	apply(w, n, true, &jb);
	char before[8];
	memcpy(before, c->path, 8);
	(void)read(rfd, c->path, 8);
	st->kernel_wrote = memcmp(before, c->path, 8) != 0;
	st->reached = 3;
	store(c->values[0], 'X');
	store((char *)&c->port, 'X');
	st->reached = 4;
	_exit(0);
}

static bool has_shim_line(const char *err)
{
	return strstr(err, "pmalloc[") || strstr(err, "pmalloc: ");
}

static enum outcome run(const struct write *w, size_t n, char *why, size_t why_len)
{
	int p[2];
	if (pipe(p) < 0 || write(p[1], "TAMPERED", 8) != 8 || ftruncate(errfd, 0) < 0 ||
	    lseek(errfd, 0, SEEK_SET) < 0) {
		perror("api_tamper_reload: setup");
		exit(2);
	}
	memset((void *)st, 0, sizeof(*st));
	pid_t pid = fork();
	if (pid < 0) {
		perror("api_tamper_reload: fork");
		exit(2);
	}
	if (pid == 0) {
		close(p[1]);
		child(w, n, p[0]);
	}
	close(p[0]);
	close(p[1]);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			perror("api_tamper_reload: waitpid");
			exit(2);
		}
	bool hung = WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM;
	last_journaled = journal_has(pid);
	char err[ERR_MAX];
	ssize_t len = pread(errfd, err, sizeof(err) - 1, 0);
	err[len > 0 ? len : 0] = '\0';
	if (getenv("TAMPER_VERBOSE"))
		fprintf(stderr, "api_tamper_reload: the run's stderr: %s\n", err);
	bool report = has_shim_line(err);
	why[0] = '\0';
	if (hung)
		snprintf(why, why_len, "hung (killed after %d s)", RUN_DEADLINE_S);
	else if (st->kernel_wrote)
		snprintf(why, why_len, "the kernel's write into the reloaded configuration was let through");
	else if (st->handler == 2)
		snprintf(why, why_len, "the program's handler ran for a write into the configuration");
	else if (st->reached == 4 || (WIFEXITED(status) && WEXITSTATUS(status) == 0))
		snprintf(why, why_len, "the write into the reloaded configuration was let through");
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 5)
		snprintf(why, why_len, "the reload failed (no memory) without a report");
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 6)
		snprintf(why, why_len, "the fault handler jumped into the program's own sigjmp_buf: no report, no kill");
	if (why[0])
		return O_FAILED;
	for (size_t i = 0; i < n; i++)
		if (st->reached == 0 && st->handler == 1 && st->fault_addr == w[i].addr)
			return O_REFUSED;
	if (st->reached == 3 && WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV && report)
		return O_PROTECTED;
	if (report)
		return O_REPORTED;
	if (st->reached == 3) {
		/* Died at the store, without the shim's report. */
		snprintf(why, why_len, "died at the store without a report (%s %d): %.200s",
			 WIFSIGNALED(status) ? "signal" : "exit",
			 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), err);
		return O_FAILED;
	}
	return O_CRASHED;
}

/* ---- the table's rows ---- */

static uintptr_t find_pool(void)
{
	for (size_t i = 0; i < n_maps; i++) {
		if (strcmp(maps[i].perms, "rw-p") != 0 || maps[i].named)
			continue;
		unsigned char vec[1];
		for (uintptr_t a = maps[i].lo; a < maps[i].hi && a - maps[i].lo < (64u << 20); a += 4096)
			if (mincore((void *)a, 4096, vec) == 0 && (vec[0] & 1))
				for (uintptr_t w = a; w < a + 4096; w += POOL_STRUCT)
					if (*(uint64_t *)w == (POOL_MAGIC ^ w))
						return w;
	}
	return 0;
}

/* The site table's word for the call of malloc in parse_config: its
 * address above 16 bits of route (shim/site.h). */
static uintptr_t find_site_word(void)
{
	uintptr_t lo = (uintptr_t)parse_config, hi = (uintptr_t)parse_config_end;
	if (hi <= lo)
		hi = lo + 512;
	for (size_t i = 0; i < n_maps; i++) {
		if (strcmp(maps[i].perms, "rw-p") != 0 || maps[i].named)
			continue;
		unsigned char vec[1];
		for (uintptr_t a = maps[i].lo; a < maps[i].hi && a - maps[i].lo < (1u << 20); a += 4096)
			if (mincore((void *)a, 4096, vec) == 0 && (vec[0] & 1))
				for (uintptr_t w = a; w < a + 4096; w += 8) {
					uint64_t v = *(uint64_t *)w;
					if ((v >> 16) > lo && (v >> 16) <= hi && (uint16_t)v >= 2)
						return w;    /* a pool's route: route + 2 >= 2 */
				}
	}
	return 0;
}

/* What an attacker who knows the shim's layout (its symbol table) stores
 * in the guard word to make it read "busy": the token as the shim made it
 * from two addresses (guard_anchor, before issue 27), else her best guess
 * without the secret: the same with the address of the page that holds it. */
static uint64_t busy_guess(uintptr_t word)
{
	static uintptr_t anchor;
	if (!anchor)
		anchor = shim_symbol("guard_anchor");
	if (!anchor)
		anchor = shim_symbol("os_ro");
	return (word ^ anchor) | 1u;
}

/* The span struct of the original configuration (arena.h's unit map). */
static uintptr_t cfg_span(void)
{
	uintptr_t a = shim_symbol("units_ro");
	if (!a)
		return 0;
	uintptr_t base = *(uintptr_t *)a, *heads = *(uintptr_t **)(a + 16), spans = *(uintptr_t *)(a + 24);
	uint32_t h = ((uint32_t *)heads)[((uintptr_t)cfg->values[0] - base) >> 16];
	return h ? spans + (h - 1) * SPAN_SIZE : 0;
}

/* Issue 27's table, rows 1-4 and 7: one write each, the value an attacker
 * would choose. */
static size_t attack_row(const char *row, uintptr_t pool, struct write *w)
{
	uintptr_t a;
	if (strcmp(row, "busy_token") == 0 && (a = shim_symbol("shim_busy")))
		return w[0] = (struct write){ a, busy_guess(a), false }, 1;
	if (strcmp(row, "active_region") == 0 && pool && (a = shim_symbol("pool_tls"))) {
		/* A fake region in her memory: this pool's, its stamp, room. */
		shaped[0] = pool;
		shaped[1] = *(uint64_t *)(pool + POOL_OFF_STAMP);
		shaped[2] = (uintptr_t)&shaped[256];
		shaped[3] = (uintptr_t)&shaped[1024];
		shaped[4] = (uintptr_t)&shaped[64];           /* where records go */
		return w[0] = (struct write){ a + TLS_OFF_ACTIVE, (uintptr_t)shaped, false }, 1;   /* pool_tls.active */
	}
	if (strcmp(row, "next_unit") == 0 && (a = shim_symbol("next_unit"))) {
		big_alloc = store_original = no_trigger = true;
		return w[0] = (struct write){ a, *(uint64_t *)a & ~UINT64_C(0xffffffff), false }, 1;
	}
	if (strcmp(row, "free_runs") == 0 && (a = shim_symbol("free_runs")) && cfg_span()) {
		/* A free run in her memory, shaped as the arena's, over the
		 * configuration's units, as long as the large object needs. */
		big_alloc = store_original = no_trigger = true;
		memset(shaped, 0, sizeof(shaped));
		*(uint64_t *)((char *)shaped + SPAN_OFF_BYTES) = (uint64_t)5 << 16;
		*(uint32_t *)((char *)shaped + SPAN_OFF_FIRST_UNIT) = *(uint32_t *)(cfg_span() + SPAN_OFF_FIRST_UNIT);
		*((char *)shaped + SPAN_OFF_FREE_RUN) = 1;
		return w[0] = (struct write){ a, (uintptr_t)shaped, false }, 1;
	}
	if (strcmp(row, "walk_env") == 0 && (a = shim_symbol("fault_walk_env")))
		return w[0] = (struct write){ a, JB_MARK, true }, 1;
	/* The lock of the handler's installation set to "held" (found by make
	 * tamper: a pthread mutex then, its word set, the next protect waited
	 * for ever), by thread 1 or by this very thread. */
	if ((strcmp(row, "install_lock") == 0 || strcmp(row, "install_lock_self") == 0) &&
	    ((a = shim_symbol("install_owner")) || (a = shim_symbol("install_lock"))))
		return w[0] = (struct write){ a, strcmp(row, "install_lock") == 0 ?
						 (*(uint64_t *)a & ~UINT64_C(0xffffffff)) | 1 : SELF_MARK, false }, 1;
	if (strcmp(row, "report_owner") == 0 && (a = shim_symbol("report_owner")))
		return w[0] = (struct write){ a, SELF_MARK, true }, 1;    /* the child's own id */
	if (strcmp(row, "entry_busy") == 0 && (a = shim_symbol("entry_busy")))
		return w[0] = (struct write){ a, (*(uint64_t *)a & ~UINT64_C(0xff)) | 1, true }, 1;
	if (strcmp(row, "pool_magic") == 0 && pool)
		return w[0] = (struct write){ pool, 0, true }, 1;
	if (strcmp(row, "unit_head") == 0 && (a = shim_symbol("units_ro"))) {
		uintptr_t base = *(uintptr_t *)a, heads = *(uintptr_t *)(a + 16);
		uintptr_t u = heads + 4 * (((uintptr_t)cfg->values[0] - base) >> 16);
		return w[0] = (struct write){ u & ~(uintptr_t)7, *(uint64_t *)(u & ~(uintptr_t)7) &
						 ~((u & 7) ? UINT64_C(0xffffffff00000000) : UINT64_C(0xffffffff)), true }, 1;
	}
	return 0;
}

static size_t row_writes(const char *row, struct write *w)
{
	uintptr_t pool = find_pool(), a;
	/* A word as the sweep names it: shim+0xOFF=VALUE or TLS+0xOFF=VALUE
	 * (a failure it printed, tried again alone). */
	bool in_tls = strncmp(row, "TLS+", 4) == 0;
	if (in_tls || strncmp(row, "shim+", 5) == 0) {
		char *end;
		uintptr_t off = strtoull(row + (in_tls ? 4 : 5), &end, 0);
		if (*end != '=')
			return 0;
		return w[0] = (struct write){ (in_tls ? seg.tls : seg.base) + off, strtoull(end + 1, NULL, 0), false }, 1;
	}
	if (strcmp(row, "site_route") == 0) {
		a = find_site_word();
		if (!a)
			return 0;
		w[0] = (struct write){ a, (*(uint64_t *)a & ~UINT64_C(0xffff)) | 1, false };   /* route: the heap */
		return 1;
	}
	if (strcmp(row, "site_armed") == 0 && (a = shim_symbol("shim_ro")))
		return w[0] = (struct write){ a + 8, 0, false }, 1;
	if (strcmp(row, "max_bytes") == 0 && (a = shim_symbol("pool_ro")))
		return w[0] = (struct write){ a + 16, 1, false }, 1;              /* caps[0].bytes */
	if (strcmp(row, "capped_used") == 0 && pool)
		return w[0] = (struct write){ pool + POOL_OFF_CAPPED_USED, UINT64_MAX / 2, false }, 1;   /* "over the cap" */
	if (strcmp(row, "span_cursor") == 0 && (a = shim_symbol("units_ro"))) {
		/* The span of the configuration (shim/arena.h: the unit map's base,
		 * then unit_head, spans; a span of SPAN_SIZE bytes, its cursor at 24). */
		uintptr_t base = *(uintptr_t *)a, *heads = *(uintptr_t **)(a + 16), spans = *(uintptr_t *)(a + 24);
		uint32_t h = ((uint32_t *)heads)[((uintptr_t)cfg->values[0] - base) >> 16];
		if (!h)
			return 0;
		return w[0] = (struct write){ spans + (h - 1) * SPAN_SIZE + SPAN_OFF_CURSOR, UINT64_MAX, false }, 1;
	}
	if (strcmp(row, "pool_lock_owner") == 0 && pool)
		return w[0] = (struct write){ pool + POOL_OFF_LOCK + 8, UINT64_MAX, false }, 1;   /* owner, users */
	if (strcmp(row, "dirty") == 0 && pool)
		return w[0] = (struct write){ pool + POOL_OFF_FIRST, 0, false }, 1;   /* the list protect walks */
	if (strcmp(row, "regions") == 0 && pool)
		return w[0] = (struct write){ pool + POOL_OFF_REGIONS, 0, false }, 1;
	if (strcmp(row, "region") == 0 && pool && (a = shim_symbol("pool_tls"))) {
		for (uintptr_t r = a + TLS_OFF_SLOTS; r < a + TLS_OFF_SLOTS + 4 * REGION_SIZE; r += REGION_SIZE)
			if (*(uintptr_t *)r == pool) {
				w[0] = (struct write){ r + REGION_OFF_CUR, (uintptr_t)forged, false };
				w[1] = (struct write){ r + REGION_OFF_END, (uintptr_t)forged + sizeof(forged), false };
				w[2] = (struct write){ r + REGION_OFF_STAMP, *(uint64_t *)(pool + POOL_OFF_STAMP), false };
				return 3;
			}
		return 0;
	}
	if (strcmp(row, "mseal") == 0 && (a = shim_symbol("os_ro")))
		return w[0] = (struct write){ a + 8, 0, false }, 1;
	if (strcmp(row, "fills") == 0 && (a = shim_symbol("fills")))
		return w[0] = (struct write){ a, 1, false }, 1;
	if (strcmp(row, "table") == 0 && (a = shim_symbol("rro")))
		return w[0] = (struct write){ a + 32, 0, false }, w[1] = (struct write){ a + 40, 0, false }, 2;
	if (strcmp(row, "rules") == 0 && (a = shim_symbol("rro")) && *(uintptr_t *)(a + 8)) {
		uintptr_t rules = *(uintptr_t *)(a + 8);
		return w[0] = (struct write){ rules + 16, (uintptr_t)forged, false }, 1;   /* rule 0's function glob */
	}
	if (strcmp(row, "client_fd") == 0 && (a = shim_symbol("conn")))
		return w[0] = (struct write){ a, 7, false }, w[1] = (struct write){ a + 8, 0, false },
		       w[2] = (struct write){ a + 16, 0, false }, 3;
	if (strcmp(row, "arena_size") == 0 && (a = shim_symbol("units_ro")))
		return w[0] = (struct write){ a + 8, 0, false }, 1;
	if (strcmp(row, "prog_segv") == 0 && (a = shim_symbol("fault_prog")))
		return w[0] = (struct write){ a, (uintptr_t)forged, false }, 1;   /* slot 0's handler */
	return attack_row(row, pool, w);
}

static int do_row(const char *row)
{
	struct write w[4];
	size_t n = row_writes(row, w);
	if (!n) {
		fprintf(stderr, "api_tamper_reload: row %s: its word was not found\n", row);
		return 2;
	}
	char why[512];
	enum outcome o = run(w, n, why, sizeof(why));
	/* A kill by the shim (the store refused, its report on stderr) must
	 * have reached the journal too, where there is one to ask. */
	bool unreported = journal_fd >= 0 && o == O_PROTECTED && !last_journaled;
	printf("api_tamper_reload: row %s (%zu write%s at %p): %s%s%s%s\n", row, n, n > 1 ? "s" : "",
	       (void *)w[0].addr, outcome_names[o], why[0] ? ": " : "", why,
	       journal_fd < 0 || o != O_PROTECTED ? "" : last_journaled ? "; in the journal" :
	       "; FAILED: NOT in the journal");
	return o == O_FAILED || o == O_CRASHED || unreported ? 1 : 0;
}

/* ---- the sweep ---- */

static int do_sweep(size_t sample)
{
	targets = calloc(MAX_TARGETS, sizeof(*targets));
	if (!targets)
		return 2;
	add_targets();
	if (n_targets == 0) {
		fprintf(stderr, "api_tamper_reload: no target found\n");
		return 2;
	}
	collect_states();
	read_maps();
	/* The sampling child's protects, said to the journal (no daemon):
	 * drained, not left to fill the socket before the first run. */
	(void)journal_has(0);
	/* A sample takes a third of its words from each kind, spread over it. */
	size_t step[K_KINDS];
	for (int k = 0; k < K_KINDS; k++)
		step[k] = sample && counts[k] > sample / K_KINDS ? counts[k] / (sample / K_KINDS ? sample / K_KINDS : 1) : 1;
	size_t seen[K_KINDS] = { 0 };
	/* 0, 1, all ones and an address, then what an attacker tries besides
	 * (issue 27): small indexes (2, 3, 1 in the upper half), the guard's
	 * token made for the word's address as she can make it (busy_guess),
	 * a pointer to a copy of what the word points to, in her memory (a
	 * structure shaped as the shim's, which she then controls), the value
	 * there now moved by one (the next or the previous index, unit, slot),
	 * with either half cleared (a 4-byte field zeroed beside another), and
	 * the values the shim itself kept there in other states
	 * (collect_states). */
	enum { V_ZERO, V_ONE, V_ONES, V_ADDR, V_TWO, V_THREE, V_TOKEN, V_SHAPED, V_HIGH_ONE, V_NEXT, V_PREV,
	       V_LOW_CLEARED, V_HIGH_CLEARED, V_STATE, V_VALUES = V_STATE + STATE_VALUES };
	const char *const vnames[] = { "0", "1", "~0", "&attacker", "2", "3", "token", "&shaped copy", "1 << 32",
				       "now + 1", "now - 1", "low half 0", "high half 0", "a state's", "a state's",
				       "a state's" };
	_Static_assert(sizeof(vnames) / sizeof(vnames[0]) == V_VALUES, "a name per value");
	unsigned out[O_OUTCOMES][K_KINDS] = { { 0 } };
	unsigned by_value[V_VALUES][O_OUTCOMES] = { { 0 } };
	size_t words = 0, runs = 0, unjournaled = 0;
	int failed = 0;
	/* TAMPER_SHARD=K/M: only the words K, K + M, K + 2M... of the list
	 * (make tamper's sweep split over processes). */
	unsigned shard = 0, shards = 1;
	const char *sh = getenv("TAMPER_SHARD");
	if (sh && (sscanf(sh, "%u/%u", &shard, &shards) != 2 || shards == 0 || shard >= shards)) {
		fprintf(stderr, "api_tamper_reload: TAMPER_SHARD=%s: want K/M, K < M\n", sh);
		return 2;
	}
	for (size_t i = 0; i < n_targets; i++) {
		if (seen[targets[i].kind]++ % step[targets[i].kind] != 0 || i % shards != shard)
			continue;
		words++;
		uint64_t now = *(uint64_t *)targets[i].addr;
		const uint64_t values[V_VALUES] = { 0, 1, UINT64_MAX, (uintptr_t)forged, 2, 3,
						    busy_guess(targets[i].addr), (uintptr_t)shaped, UINT64_C(1) << 32,
						    now + 1, now - 1, now & ~UINT64_C(0xffffffff), now & UINT64_C(0xffffffff),
						    state_vals[i][0], state_vals[i][1], state_vals[i][2] };
		for (size_t v = 0; v < V_VALUES; v++) {
			/* A value the word holds already, or one tried on it before:
			 * no run. */
			bool again = v != V_SHAPED && values[v] == now;
			for (size_t u = 0; u < v && !again; u++)
				again = u != V_SHAPED && values[u] == values[v];
			if (again)
				continue;
			if (v == V_SHAPED) {
				/* Only for a word that holds a pointer to readable memory. */
				size_t k = 0;
				while (k < n_maps && !(now >= maps[k].lo && now < maps[k].hi))
					k++;
				if (k == n_maps || maps[k].perms[0] != 'r')
					continue;
				size_t len = maps[k].hi - now < sizeof(shaped) ? maps[k].hi - now : sizeof(shaped);
				memset(shaped, 0, sizeof(shaped));
				memcpy(shaped, (const void *)now, len);
			}
			struct write w = { targets[i].addr, values[v], false };
			char why[512];
			enum outcome o = run(&w, 1, why, sizeof(why));
			runs++;
			out[o][targets[i].kind]++;
			by_value[v][o]++;
			if (journal_fd >= 0 && o == O_PROTECTED && !last_journaled) {
				unjournaled++;
				o = O_FAILED;
				snprintf(why, sizeof(why), "killed by the shim, NOT reported to the journal");
			}
			if (o == O_FAILED || (o == O_CRASHED && !sample)) {
				failed += o == O_FAILED;
				if (o == O_CRASHED)
					snprintf(why, sizeof(why), "crashed before the store, no report");
				uintptr_t from = targets[i].kind == K_TLS ? seg.tls : seg.base;
				printf("api_tamper_reload: %s word %p (%s+%#lx) = %s (%#llx, was %#llx): %s\n",
				       kind_names[targets[i].kind], (void *)w.addr, targets[i].kind == K_TLS ? "TLS" : "shim",
				       (unsigned long)(w.addr - from), vnames[v], (unsigned long long)values[v],
				       (unsigned long long)now, why);
			}
		}
	}
	printf("api_tamper_reload: the shim's states: %zu, %zu and %zu pages copied (start, armed, reloaded), %u samples\n",
	       snaps[S_START].n, snaps[S_ARMED].n, snaps[S_RELOADED].n, *n_samples);
	printf("api_tamper_reload: %zu words tried of %zu (%s %u, %s %u, %s %u), up to %d values each, %zu runs\n",
	       words, n_targets, kind_names[0], counts[0], kind_names[1], counts[1], kind_names[2], counts[2],
	       (int)V_VALUES, runs);
	if (journal_fd >= 0)
		printf("api_tamper_reload:   kills by the shim not in the journal: %zu\n", unjournaled);
	for (int o = 0; o < O_OUTCOMES; o++)
		printf("api_tamper_reload:   %s: %u (.data/.bss %u, TLS %u, metadata %u)\n", outcome_names[o],
		       out[o][0] + out[o][1] + out[o][2], out[o][0], out[o][1], out[o][2]);
	/* Per value (the three of other states as one): runs, and how they
	 * ended in outcome_names' order. */
	for (size_t v = 0; v <= V_STATE; v++) {
		unsigned n[O_OUTCOMES] = { 0 }, all = 0;
		for (size_t u = v; u < (v == V_STATE ? V_VALUES : v + 1); u++)
			for (int o = 0; o < O_OUTCOMES; o++)
				n[o] += by_value[u][o], all += by_value[u][o];
		printf("api_tamper_reload:   value %s: %u runs (protected %u, reported %u, refused %u, crashed %u,"
		       " failed %u)\n", v == V_STATE ? "of another state" : vnames[v], all, n[O_PROTECTED],
		       n[O_REPORTED], n[O_REFUSED], n[O_CRASHED], n[O_FAILED]);
	}
	printf("api_tamper_reload: %s\n", failed ? "FAILED" : "all held");
	return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	bool sweep = argc >= 2 && strcmp(argv[1], "sweep") == 0;
	if (!(sweep && argc <= 3) && !(argc == 3 && strcmp(argv[1], "row") == 0)) {
		fprintf(stderr, "usage: api_tamper_reload sweep [N] | row NAME\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct rlimit nocore = { 0, 0 };
	setrlimit(RLIMIT_CORE, &nocore);
	st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	errfd = memfd_create("api_tamper_reload-err", MFD_CLOEXEC);
	if (st == MAP_FAILED || errfd < 0) {
		perror("api_tamper_reload");
		return 2;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = program_handler;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, NULL);

	if (sweep)
		snap_take(&snaps[S_START]);
	cfg = parse_config("original");
	if (sweep)
		snap_take(&snaps[S_ARMED]);
	trigger();
	if (!cfg || pmalloc_is_protected(cfg) != 1 || pmalloc_is_protected(cfg->path) != 1) {
		fprintf(stderr, "api_tamper_reload: the configuration is not protected (policy not applied?)\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(forged) / sizeof(forged[0]); i++)
		forged[i] = UINT64_C(0x0000000100000001);
	if (!dl_iterate_phdr(find_shim, NULL) || seg.lo >= seg.hi) {
		fprintf(stderr, "api_tamper_reload: libpmalloc_shim.so is not loaded\n");
		return 2;
	}
	read_maps();
	if (getenv("TAMPER_JOURNAL"))
		journal_open("api_tamper_reload");
	fflush(stdout);
	fflush(stderr);
	return sweep ? do_sweep(argc == 3 ? strtoul(argv[2], NULL, 10) : 0) : do_row(argv[2]);
}
