/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * api_tamper - the shim's writable state decides nothing: a program with a
 * protected object overwrites, one run (a forked child) per target word
 * and value, a word of the shim's writable data, then lets the kernel
 * write into the object (read(2) from a pipe) and writes into it itself.
 * Every child must die by a signal, with the kernel's write refused: a
 * child that exits, hangs (killed after RUN_DEADLINE_S), or sees the
 * kernel's bytes in the object is a failure, printed with its target.
 *
 *   api_tamper policy   the object comes from malloc() in make_secret(),
 *                       a site of pool "secrets" of the enforce policy in
 *                       PMALLOC_CONF (protected by pmalloc_protect_named)
 *   api_tamper api      the object comes from pmalloc_create_pool(), no
 *                       policy (always enforce)
 *   api_tamper api-beside  the same beside an audit or learn policy's
 *                       pool "secrets" (make_secret), protected too: the
 *                       API pool stays enforced, also when a word is made
 *                       to point at the policy pool's struct
 *
 * Targets, found at run time without knowing the shim's layout:
 *   - the shim's writable PT_LOAD segment outside RELRO (.data, .bss):
 *     each object of its symbol table, its first WORDS_PER_OBJECT words
 *     (every word of all but a few large buffers), and the words no
 *     symbol covers;
 *   - the shim's thread-local block (this thread's);
 *   - every pool struct (found by its magic word: POOL_MAGIC ^ address),
 *     each word;
 *   - in anonymous writable mappings (the shim's side tables: span
 *     metadata, the site table...), resident pages only: the words around
 *     each word that points into a pool struct (a span's owner, a region's
 *     pool), around the object's record (its granule in the top half), and
 *     around the object's call-site entry (a return address into
 *     make_secret, alone in its word or above 16 bits of route);
 * each written with three values: 1 and 1 << 32 (1 in either half of the
 * word: "audit", "true", index 1), and the address of a page of this
 * program filled with 0x0000000100000001 (garbage as a number, and as a
 * pointer a forged struct saying "audit" in every field); in api-beside,
 * 1 << 32 and the address of the policy pool's struct (a span's owner
 * redirected to it) instead.  About 10,000 runs in all, 2 to 3 ms each
 * (a fork, a fault, an exit).
 *
 * TAMPER_JOURNAL=1 (tamper.sh's private namespace): the program plays
 * journald (a socket at its path), and a run killed at its store must have
 * sent its violation entry there (issue 27: every kill reported).
 *
 * Prints "api_tamper: N runs (...): all died" and exits 0, else one line per
 * failing run and exits 1; 2 when it could not set itself up.
 */
#define _GNU_SOURCE
#include <pmalloc.h>

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tamper.h"

#define POOL_MAGIC UINT64_C(0x706d616c6c6f6331)
#define POOL_STRUCT 512u
#define WORDS_PER_OBJECT 64        /* objects up to 512 bytes: every word */
#define WORDS_PER_BUFFER 16        /* larger ones (buffers): the first words */
#define MAX_TARGETS 8192
#define RUN_DEADLINE_S 10         /* a run still alive then hangs: a failure */
#define SECRET_LEN 32

struct target {
	uintptr_t addr;
	char what[80];
};

static struct target targets[MAX_TARGETS];
static size_t n_targets;
static unsigned counts[6];   /* per kind, below */
enum { K_DATA, K_TLS, K_POOL, K_SPAN, K_RECORD, K_SITE };
static const char *const kind_names[] = { "shim .data/.bss", "shim TLS", "pool struct",
					  "near pool pointers", "object record", "site entry" };

static uint64_t forged[512] __attribute__((aligned(4096)));
static char *secret;
static uintptr_t site_lo, site_hi;

static void add(uintptr_t addr, int kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add(uintptr_t addr, int kind, const char *fmt, ...)
{
	addr &= ~(uintptr_t)7;
	for (size_t i = 0; i < n_targets; i++)
		if (targets[i].addr == addr)
			return;
	if (n_targets == MAX_TARGETS)
		return;
	struct target *t = &targets[n_targets++];
	t->addr = addr;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->what, sizeof(t->what), fmt, ap);
	va_end(ap);
	counts[kind]++;
}

/* Is the page of a writable now (the shim makes some of its own pages
 * read-only: those are no target)?  From /proc/self/maps. */
static bool writable(uintptr_t a)
{
	static struct { uintptr_t lo, hi; bool w; } maps[512];
	static size_t n_maps;
	if (!n_maps) {
		FILE *m = fopen("/proc/self/maps", "re");
		char line[1024], perms[8];
		unsigned long lo, hi;
		while (m && n_maps < 512 && fgets(line, sizeof(line), m))
			if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3) {
				maps[n_maps].lo = lo;
				maps[n_maps].hi = hi;
				maps[n_maps++].w = perms[1] == 'w';
			}
		if (m)
			fclose(m);
	}
	for (size_t i = 0; i < n_maps; i++)
		if (a >= maps[i].lo && a < maps[i].hi)
			return maps[i].w;
	return false;
}

/* Where the shim keeps its pointer to the armed state (symbol shim_ro):
 * read-only once a policy is armed, so no target then. */
static uintptr_t shim_ro_at;

/* Objects of the shim's symbol table in [seg.lo, seg.hi): their first
 * words; then the words no symbol covers.  Without a symbol table, every
 * word. */
static void add_shim_data(void)
{
	static unsigned char covered[1 << 16];   /* a bit per word, up to 4 MiB */
	size_t words = (seg.hi - seg.lo) / 8;
	if (words > sizeof(covered) * 8)
		words = sizeof(covered) * 8;
	int fd = open(seg.path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	const unsigned char *f = MAP_FAILED;
	if (fd >= 0 && fstat(fd, &st) == 0)
		f = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (fd >= 0)
		close(fd);
	if (f != MAP_FAILED) {
		const ElfW(Ehdr) *eh = (const void *)f;
		const ElfW(Shdr) *sh = (const void *)(f + eh->e_shoff);
		for (int i = 0; i < eh->e_shnum; i++) {
			if (sh[i].sh_type != SHT_SYMTAB)
				continue;
			const ElfW(Sym) *sym = (const void *)(f + sh[i].sh_offset);
			const char *str = (const char *)f + sh[sh[i].sh_link].sh_offset;
			size_t n = sh[i].sh_size / sizeof(*sym);
			for (size_t k = 0; k < n; k++) {
				if (ELF64_ST_TYPE(sym[k].st_info) != STT_OBJECT || sym[k].st_size == 0 ||
				    sym[k].st_shndx == SHN_UNDEF || sym[k].st_shndx >= SHN_LORESERVE)
					continue;
				if (sh[sym[k].st_shndx].sh_flags & SHF_TLS)
					continue;
				uintptr_t a = seg.base + sym[k].st_value;
				if (strcmp(str + sym[k].st_name, "shim_ro") == 0)
					shim_ro_at = a;
				if (a < seg.lo || a >= seg.hi)
					continue;
				size_t w0 = (a - seg.lo) / 8, nw = (sym[k].st_size + (a & 7) + 7) / 8;
				for (size_t w = 0; w < nw && w0 + w < words; w++) {
					covered[(w0 + w) / 8] |= (unsigned char)(1u << ((w0 + w) % 8));
					if ((nw <= WORDS_PER_OBJECT || w < WORDS_PER_BUFFER) &&
					    writable(seg.lo + (w0 + w) * 8))
						add(seg.lo + (w0 + w) * 8, K_DATA, "%s+%zu", str + sym[k].st_name,
						    w ? w * 8 - (a & 7) : 0);   /* +0: the word of its first byte */
				}
			}
		}
		munmap((void *)f, (size_t)st.st_size);
	}
	/* Words of no symbol (padding, mostly): the first of each run. */
	for (size_t w = 0, run = 0; w < words; w++) {
		run = covered[w / 8] & (1u << (w % 8)) ? 0 : run + 1;
		if (run >= 1 && run <= WORDS_PER_BUFFER && writable(seg.lo + w * 8))
			add(seg.lo + w * 8, K_DATA, "shim+0x%lx", (unsigned long)(seg.lo + w * 8 - seg.base));
	}
}

static void add_tls(void)
{
	for (size_t off = 0; seg.tls && off + 8 <= seg.tls_len; off += 8)
		add(seg.tls + off, K_TLS, "shim TLS+%zu", off);
}

/* Resident pages of anonymous writable private mappings. */
typedef void (*page_fn)(const uint64_t *page, size_t words);

static void for_each_anon_page(page_fn fn)
{
	FILE *m = fopen("/proc/self/maps", "re");
	if (!m)
		return;
	char line[1024];
	long page = sysconf(_SC_PAGESIZE);
	unsigned char vec[256];
	while (fgets(line, sizeof(line), m)) {
		unsigned long lo, hi, ino;
		char perms[8], path[512] = "";
		if (sscanf(line, "%lx-%lx %7s %*s %*s %lu %511s", &lo, &hi, perms, &ino, path) < 4)
			continue;
		if (strcmp(perms, "rw-p") != 0 || ino != 0 || path[0])
			continue;
		/* Not this program's own pages, nor the shim's segment (above). */
		if (lo <= (uintptr_t)forged && (uintptr_t)forged < hi)
			continue;
		if (lo < seg.hi && seg.lo < hi)
			continue;
		for (uintptr_t a = lo; a < hi; a += (uintptr_t)page * sizeof(vec)) {
			size_t len = hi - a < (uintptr_t)page * sizeof(vec) ? hi - a : (uintptr_t)page * sizeof(vec);
			if (mincore((void *)a, len, vec) < 0)
				continue;
			for (size_t p = 0; p < len / (size_t)page; p++)
				if (vec[p] & 1)
					fn((const uint64_t *)(a + p * (size_t)page), (size_t)page / 8);
		}
	}
	fclose(m);
}

static uintptr_t pools[16];
static size_t n_pools;

static void find_pools(const uint64_t *pg, size_t words)
{
	for (size_t w = 0; w < words; w += POOL_STRUCT / 8)
		if (pg[w] == (POOL_MAGIC ^ (uintptr_t)&pg[w]) && n_pools < 16)
			pools[n_pools++] = (uintptr_t)&pg[w];
}

static bool in_pool(uint64_t v)
{
	for (size_t i = 0; i < n_pools; i++)
		if (v - pools[i] < POOL_STRUCT)
			return true;
	return false;
}

/* The words [at - 4, at + 16) of a side table, within its page. */
static void add_around(const uint64_t *pg, size_t words, size_t at, int kind, const char *why)
{
	size_t lo = at >= 4 ? at - 4 : 0, hi = at + 16 < words ? at + 16 : words;
	for (size_t w = lo; w < hi; w++)
		if (!in_pool((uintptr_t)&pg[w]))
			add((uintptr_t)&pg[w], kind, "%s%+d at %p", why, (int)(w - at) * 8, (void *)&pg[at]);
}

static void find_side_words(const uint64_t *pg, size_t words)
{
	uint32_t granule = (uint32_t)((uintptr_t)secret >> 4);
	for (size_t w = 0; w < words; w++) {
		if (in_pool((uintptr_t)&pg[w]))
			continue;
		if (in_pool(pg[w]))
			add_around(pg, words, w, K_SPAN, "pool pointer");
		else if ((uint32_t)(pg[w] >> 32) == granule && (pg[w] & 0xffff0000u) != 0)
			add_around(pg, words, w, K_RECORD, "record");
		else if (site_lo && ((pg[w] > site_lo && pg[w] <= site_hi) ||
				     ((pg[w] >> 16) > site_lo && (pg[w] >> 16) <= site_hi)))
			add_around(pg, words, w, K_SITE, "site entry");   /* the address alone, or above 16 bits */
	}
}

/* ---- the object ---- */

static __attribute__((noinline)) char *make_secret(void)
{
	char *s = malloc(SECRET_LEN);
	if (s)
		memcpy(s, "the secret, kept read-only......", SECRET_LEN);
	return s;
}
static __attribute__((noinline)) void make_secret_end(void)
{
	__asm__ volatile("");
}

/* ---- one run ---- */

struct stage {
	volatile int reached;        /* 1 tampered, 2 kernel write tried, 3 survived the store */
	volatile int kernel_wrote;   /* the kernel's bytes are in the object */
};

static unsigned killed_at_store, unjournaled;

static __attribute__((noinline)) void store(volatile char *p, char c)
{
	*p = c;
}

static void child(const struct target *t, uint64_t value, struct stage *st, int rfd)
{
	*(volatile uint64_t *)t->addr = value;
	st->reached = 1;
	char before[SECRET_LEN];
	memcpy(before, secret, SECRET_LEN);
	(void)read(rfd, secret, 8);
	st->kernel_wrote = memcmp(before, secret, SECRET_LEN) != 0;
	st->reached = 2;
	store(secret, 'X');
	st->reached = 3;
	_exit(0);
}

/* 0: died as it must; 1: failed (said on stdout). */
static int run(const struct target *t, uint64_t value, const char *vname, struct stage *st)
{
	int p[2];
	if (pipe(p) < 0 || write(p[1], "TAMPERED", 8) != 8) {
		perror("api_tamper: pipe");
		exit(2);
	}
	memset((void *)st, 0, sizeof(*st));
	pid_t pid = fork();
	if (pid < 0) {
		perror("api_tamper: fork");
		exit(2);
	}
	if (pid == 0) {
		close(p[1]);
		child(t, value, st, p[0]);
	}
	close(p[0]);
	close(p[1]);
	/* Woken by the child's end (its pidfd, Linux 5.3), not by polling:
	 * a run is a few hundred microseconds, and a nap past its end was
	 * most of it. */
	int status, n;
	bool hung = false;
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd < 0) {
		perror("api_tamper: pidfd_open");
		kill(pid, SIGKILL);
		exit(2);
	}
	struct pollfd w = { .fd = pfd, .events = POLLIN };
	while ((n = poll(&w, 1, RUN_DEADLINE_S * 1000)) < 0 && errno == EINTR)
		;
	close(pfd);
	if (n == 0) {
		kill(pid, SIGKILL);
		hung = true;
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			perror("api_tamper: waitpid");
			exit(2);
		}
	}
	const char *why = NULL;
	if (st->reached == 0 && !hung) {
		printf("api_tamper: %s (%p) = %s: the target was not writable\n", t->what, (void *)t->addr, vname);
		return 1;
	}
	if (hung)
		why = "hung (killed)";
	else if (st->kernel_wrote)
		why = "the kernel's write was let through";
	else if (!WIFSIGNALED(status))
		why = st->reached == 3 ? "the write was let through" : "exited";
	if (!why && st->reached == 2 && WTERMSIG(status) == SIGSEGV) {
		killed_at_store++;
		if (journal_fd >= 0 && !journal_has(pid)) {
			unjournaled++;
			why = "killed at the store, NOT reported to the journal";
		}
	} else if (journal_fd >= 0) {
		(void)journal_has(pid);   /* drained */
	}
	if (!why)
		return 0;
	printf("api_tamper: %s (%p) = %s: %s\n", t->what, (void *)t->addr, vname, why);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "policy") != 0 && strcmp(argv[1], "api") != 0 &&
			  strcmp(argv[1], "api-beside") != 0)) {
		fprintf(stderr, "usage: api_tamper policy|api|api-beside\n");
		return 2;
	}
	bool policy = strcmp(argv[1], "policy") == 0, beside = strcmp(argv[1], "api-beside") == 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct rlimit nocore = { 0, 0 };
	setrlimit(RLIMIT_CORE, &nocore);     /* thousands of deaths: no core files */
	struct pmalloc_pool *pool = NULL;
	if (policy) {
		secret = make_secret();
		if (!secret || pmalloc_protect_named("secrets") < 0) {
			fprintf(stderr, "api_tamper: no pool \"secrets\" (policy not applied?)\n");
			return 2;
		}
		site_lo = (uintptr_t)make_secret;
		site_hi = (uintptr_t)make_secret_end;
		if (site_hi <= site_lo)
			site_hi = site_lo + 64;
	} else {
		char *audited = beside ? make_secret() : NULL;
		if (beside && (!audited || pmalloc_protect_named("secrets") < 0 || pmalloc_is_protected(audited) != 1)) {
			fprintf(stderr, "api_tamper: no protected pool \"secrets\" (policy not applied?)\n");
			return 2;
		}
		pool = pmalloc_create_pool();
		secret = pool ? pmalloc(pool, SECRET_LEN) : NULL;
		if (!secret) {
			perror("api_tamper: pmalloc");
			return 2;
		}
		memcpy(secret, "the secret, kept read-only......", SECRET_LEN);
		pmalloc_protect_pool(pool);
	}
	if (pmalloc_is_protected(secret) != 1) {
		fprintf(stderr, "api_tamper: the object is not protected\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(forged) / sizeof(forged[0]); i++)
		forged[i] = UINT64_C(0x0000000100000001);
	if (!dl_iterate_phdr(find_shim, NULL) || seg.lo >= seg.hi) {
		fprintf(stderr, "api_tamper: libpmalloc_shim.so is not loaded\n");
		return 2;
	}
	add_shim_data();
	/* Read-only with a policy armed or without (no policy: NULL, frozen
	 * all the same, issue 27: a forged state took the report down). */
	if (!shim_ro_at || writable(shim_ro_at)) {
		fprintf(stderr, "api_tamper: the shim's state pointer (shim_ro) is %s\n",
			shim_ro_at ? "writable" : "not found");
		return 1;
	}
	add_tls();
	for_each_anon_page(find_pools);
	if (n_pools == 0) {
		fprintf(stderr, "api_tamper: no pool struct found\n");
		return 2;
	}
	for (size_t i = 0; i < n_pools; i++)
		for (size_t off = 0; off < POOL_STRUCT; off += 8)
			add(pools[i] + off, K_POOL, "pool struct %zu+%zu", i, off);
	for_each_anon_page(find_side_words);
	if (counts[K_SPAN] == 0 || (policy && counts[K_SITE] == 0)) {
		fprintf(stderr, "api_tamper: side tables not found (%u near pool pointers, %u site entry)\n",
			counts[K_SPAN], counts[K_SITE]);
		return 2;
	}

	struct stage *st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (st == MAP_FAILED) {
		perror("api_tamper: mmap");
		return 2;
	}
	uintptr_t policy_pool = 0;
	for (size_t i = 0; i < n_pools; i++)
		if (pools[i] != (uintptr_t)pool)
			policy_pool = pools[i];
	if (beside && !policy_pool) {
		fprintf(stderr, "api_tamper: the policy pool's struct was not found\n");
		return 2;
	}
	struct value {
		uint64_t v;
		const char *name;
	};
	const struct value all[] = {
		{ 1, "1" },
		{ UINT64_C(1) << 32, "1<<32" },
		{ (uintptr_t)forged, "&forged" },
	}, redirect[] = {
		{ UINT64_C(1) << 32, "1<<32" },
		{ policy_pool, "&policy pool" },
	};
	const struct value *values = beside ? redirect : all;
	size_t n_values = beside ? 2 : 3;
	if (getenv("TAMPER_JOURNAL"))
		journal_open("api_tamper");
	fflush(stdout);
	fflush(stderr);
	int failed = 0, runs = 0;
	/* TAMPER_ONLY=NAME: the targets named NAME ("shim_ro+0"), to try
	 * one again (with TAMPER_VERBOSE=1, their stderr shown). */
	const char *only = getenv("TAMPER_ONLY");
	for (size_t i = 0; i < n_targets; i++)
		for (size_t v = 0; v < n_values && (!only || strcmp(only, targets[i].what) == 0); v++) {
			failed += run(&targets[i], values[v].v, values[v].name, st);
			runs++;
		}
	printf("api_tamper: %d runs (%zu words x %zu values:", runs, n_targets, n_values);
	for (int k = 0; k < 6; k++)
		printf(" %s %u%s", kind_names[k], counts[k], k < 5 ? "," : "");
	printf("): %s\n", failed ? "FAILED" : "all died");
	printf("api_tamper: %u killed at the store, %s\n", killed_at_store,
	       journal_fd < 0 ? "the journal not asked" : unjournaled ? "some NOT in the journal" : "every one in the journal");
	if (memcmp(secret, "the secret, kept read-only......", SECRET_LEN) != 0) {
		printf("api_tamper: the object changed in the parent\n");
		failed++;
	}
	return failed ? 1 : 0;
}
