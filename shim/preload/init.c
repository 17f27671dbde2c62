/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * init.c - start-up of the interposition: which policy applies to this
 * process (its image from pmallocd, else the policy file compiled here by
 * the same code), its pools, its symbols and its triggers; then the state,
 * with its copy of the image, is made read-only and armed.
 *
 * Runs once, as a constructor of the preloaded library, before the
 * program's own constructors and main.  Fails open: any problem leaves the
 * program running unprotected, said once on stderr when it is the policy
 * file's fault, otherwise only under PMALLOC_DEBUG=1.  Its allocations go
 * to the heap (by name, and shim_busy for libconfig's and the loader's).
 * It sets the lower layers' hooks first (the composition root: nothing
 * below calls up by name).  Never exits, aborts or fails the program, and never
 * leaves a state half armed: the shim's state is published (shim) only
 * once it is complete and read-only.
 */
#define _GNU_SOURCE
#include "armed.h"
#include "stderr.h"
#include "site.h"
#include "arena.h"
#include "client.h"
#include "dynsym.h"
#include "fault.h"
#include "fmt.h"
#include "heap.h"
#include "hooks.h"
#include "interpose.h"
#include "journal.h"
#include "learn.h"
#include "life.h"
#include "reload.h"
#include "libc.h"
#include "os.h"
#include "resolve.h"
#include "respawn.h"
#include "ro.h"
#include "scratch.h"
#include "rules_msg.h"
#include "trigger.h"
#include "pmalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_CONF POLICY_DEFAULT_FILE
#define DEFAULT_SOCKET POLICY_DEFAULT_SOCKET
#define HANDSHAKE_TIMEOUT_MS 100

/* A policy image as received or compiled, before it is armed. */
struct policy_image_buf {
	void *image;                     /* malloc'ed */
	size_t len;
	uint64_t generation;             /* the daemon's; 0 from the file */
};

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fmt_vline(false, fmt, ap);
	va_end(ap);
}

static void read_identity(char *exe, size_t exe_len, char *comm, size_t comm_len)
{
	ssize_t n = readlink("/proc/self/exe", exe, exe_len - 1);
	exe[n > 0 ? n : 0] = '\0';
	comm[0] = '\0';
	int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = os_read(fd, comm, comm_len - 1);
		comm[n > 0 ? n : 0] = '\0';
		comm[strcspn(comm, "\n")] = '\0';
		close(fd);
	}
}

/* The policy image for this process: 1 with *ret (malloc'ed, validated),
 * 0 for none, never fails.
 *
 * pmallocd is asked first (the HELLO went out as the constructor began:
 * the shim's own start-up runs while the daemon identifies this process):
 * it matched this process by what the kernel
 * says and hands out the image it compiled when it loaded the file, so no
 * policy text is parsed here.  A healthy daemon answers within a
 * millisecond; after HANDSHAKE_TIMEOUT_MS the policy file is read (the
 * fallback needs it anyway), and when it sets a longer
 * daemon.handshake_timeout_ms the wait for the daemon goes on until then.
 * So the setting costs nothing when the daemon is well, and no process
 * reads the file only to learn a timeout.  Without a daemon, the file's
 * policy for this process is compiled by the code pmallocd uses, and the
 * parsed file freed. */
static const char *socket_path(void)
{
	const char *sock = secure_getenv("PMALLOC_SOCKET");
	return sock && *sock ? sock : DEFAULT_SOCKET;
}

/* r: what client_start() said when the constructor began. */
static int load_policy(int r, const char *exe, const char *comm, struct policy_image_buf *ret)
{
	const char *sock = socket_path();
	char err[POLICY_ERR_MAX];
	if (r == 0)
		r = client_wait(HANDSHAKE_TIMEOUT_MS, &ret->image, &ret->len, &ret->generation);
	if (r >= 0) {
		if (r == 0)
			debug_printf("pmallocd has no policy for this process");
		return r;
	}
	debug_printf("no answer from pmallocd at %s: %s; reading the policy file", sock, strerror(-r));

	const char *conf = secure_getenv("PMALLOC_CONF");
	if (!conf || !*conf)
		conf = DEFAULT_CONF;
	struct policy_set *file = NULL;
	int f = policy_set_load_file(conf, &file, err, sizeof(err));
	if (r == -ETIMEDOUT && f == 0 && file->daemon.handshake_timeout_ms > HANDSHAKE_TIMEOUT_MS) {
		r = client_wait(file->daemon.handshake_timeout_ms - HANDSHAKE_TIMEOUT_MS, &ret->image,
				&ret->len, &ret->generation);
		if (r >= 0) {
			policy_set_free(file);
			if (r == 0)
				debug_printf("pmallocd has no policy for this process");
			return r;
		}
		debug_printf("still no answer from pmallocd after %u ms", file->daemon.handshake_timeout_ms);
	}
	client_abandon();
	if (f == -ENOENT && access(conf, F_OK) < 0) {
		debug_printf("no policy file %s", conf);
		return 0;
	}
	if (f < 0) {
		say("%s (running unprotected)", err);
		return 0;
	}
	const struct policy *pol = policy_set_match(file, exe, comm, getuid());
	if (!pol) {
		debug_printf("no policy matches %s (comm %s, uid %u)", exe, comm, (unsigned)getuid());
		policy_set_free(file);
		return 0;
	}
	r = policy_image_compile(file, pol, &ret->image, &ret->len);
	if (r < 0)
		say("policy \"%s\" of %s cannot be compiled: %s (running unprotected)", pol->name, conf,
		    strerror(-r));
	/* Loaded when the file was last written (as the load's fstat saw
	 * it, no stat(2) more): learned entries tell the runs of one learn
	 * policy by it. */
	if (r == 0)
		((struct pimg_header *)ret->image)->loaded_us = file->written_us;
	policy_set_free(file);
	ret->generation = 0;
	return r < 0 ? 0 : 1;
}

/* The composition root: what the lower layers call back, set here and
 * read-only from here on (hooks.h, the state's rules_changed). */
static void on_arena_reserved(void)
{
	interpose_arena_reserved();    /* free() checks for pool pointers from now on */
}

static void rules_changed(void)
{
	rules_msg_send(RULES_MSG_RULES);
}

/* The fault handler put right at a protect: the journal, pmallocd (its
 * status says it), and stderr under PMALLOC_DEBUG. */
static void on_fault_notice(unsigned int kind, const char *what)
{
	debug_printf("%s", what);
	journal_fault_notice(what);
	struct pmw_notice m;
	memset(&m, 0, sizeof(m));
	pmw_header_init(&m.h, PMW_NOTICE, sizeof(m));
	m.what = kind;
	(void)client_send_msg(&m, sizeof(m));
}

static void set_hooks(void)
{
	core_hooks_set(&(struct core_hooks){
		.report_sink = client_report,
		.report_limits = state_report_limits,
		.arena_on_reserve = on_arena_reserved,
		.protect_named = trigger_protect_named,
		.fault_notice = on_fault_notice,
		.deferred_poll = trigger_fallback_poll_slow,
	});
	/* A pool made before this constructor ran (another library's): the
	 * arena read the hook unset (arena.c publishes its size first). */
	if (__atomic_load_n(&arena_size, __ATOMIC_SEQ_CST))
		on_arena_reserved();
}

/* Not only under PMALLOC_DEBUG: a typo must not protect nothing silently. */
static void log_unmatched(const struct pimg_header *img)
{
	struct resolve_rule_view v;
	for (size_t i = 0; resolve_rule(i, &v); i++) {
		if ((v.matched && !v.dropped) || !v.looked_up)
			continue;
		const char *kind = v.wrapper ? "wrapper" : "site";
		char text[600];
		snprintf(text, sizeof(text), "%s%s%s", v.object ? v.object : "", v.object ? ":" : "", v.function);
		/* Its object is not loaded: it may be dlopen'ed later, or loaded
		 * by another process of the same program (a worker that loads a
		 * module its master never does).  Not a rule that matches
		 * nothing; status shows it as waiting. */
		if (v.dropped) {
			/* drop_rule() said where, under PMALLOC_DEBUG. */
			journal_unmatched(pimg_policy_name(img), v.wrapper ? "" : pimg_pool_name(img, (size_t)v.pool),
					  kind, text, true);
			continue;
		}
		if (!v.object_loaded) {
			debug_printf("%s rule \"%s\" waits for an object its glob fits (none loaded at start-up)",
				     kind, text);
			continue;
		}
		debug_printf("%s rule \"%s\" matches no function loaded at start-up", kind, text);
		journal_unmatched(pimg_policy_name(img), v.wrapper ? "" : pimg_pool_name(img, (size_t)v.pool),
				  kind, text, false);
	}
}

/* The state, and the pointer to it, read-only from now on; sealed too
 * under protection = "seal" where the kernel has mseal.  0, or -errno
 * when it is not read-only (the caller then arms nothing, and says so);
 * a seal refused leaves it read-only, said. */
static int make_ro(void *p, size_t len, bool seal)
{
	int r = ro_freeze(p, len);
	if (r < 0) {
		say("cannot make the policy's state read-only: %s (running unprotected)", strerror(-r));
		return r;
	}
	if (seal && os_have_mseal && (r = os_seal(p, len)) < 0)
		say("cannot seal the policy's state: %s (read-only, not sealed)", strerror(-r));
	return 0;
}

/* A start-up that stops before fault_arm(): the pools it made keep the
 * handler's decisions (enforce) read-only all the same. */
static int unarmed(bool installed, int r)
{
	if (installed)
		fault_install();
	return r;
}

static int arm_state(struct shim_state *st, const char *exe, void *mem, size_t len, bool own_map, bool seal);

/* An arming that stops while its freezes are held (not under seal): what
 * was put off done now, said when a page stays writable; r passed on. */
static int held_released(bool seal, int r)
{
	const char *left = "armed state";
	int released = seal ? 0 : ro_release(&left);
	if (released < 0)
		say("the %s cannot be made read-only: %s", left, strerror(-released));
	return r;
}

/* The state and the image, in the page of the pointer to them (armed.h)
 * when they fit, else in a mapping of their own: the image is copied there
 * and validated again in place (what is armed is what was checked), then
 * the whole is made read-only, and sealed under protection = "seal" where
 * mseal(2) exists. */
static int arm(const struct policy_image_buf *in, const char *exe)
{
	void *mem = shim_ro.room;
	size_t state_len = ALIGN_UP(sizeof(struct shim_state), 64);
	bool own_map = state_len + in->len > sizeof(shim_ro.room);
	size_t len = ALIGN_UP(state_len + in->len, os_page_size);
	int r = own_map ? os_map(len, &mem) : 0;
	if (r < 0)
		return r;
	struct shim_state *st = mem;
	memcpy((char *)mem + state_len, in->image, in->len);
	if (policy_image_validate((char *)mem + state_len, in->len) < 0) {
		if (own_map)
			os_unmap(mem, len);
		return -EPROTO;
	}
	const struct pimg_header *img = (const void *)((char *)mem + state_len);
	st->image = img;
	st->generation = in->generation;
	st->start_ns = os_monotonic_ns(false);
	const char *policy_name = pimg_policy_name(img);
	debug_printf("policy \"%s\" (%s, %s) applies to %s%s", policy_name, policy_mode_name(img->mode),
		     img->protection == POLICY_PROT_SEAL ? "seal" : "mprotect", exe,
		     in->generation ? ", from pmallocd" : "");
	if (img->n_pools > SHIM_POOLS_MAX) {
		say("policy \"%s\" has %u pools, more than the %d supported; running unprotected",
		    policy_name, img->n_pools, SHIM_POOLS_MAX);
		if (own_map)
			os_unmap(mem, len);
		return -E2BIG;
	}
	bool installed = false;
	bool seal = img->protection == POLICY_PROT_SEAL;
	/* The first freezes of the pools' table, the fault handler's two
	 * pages, the filter, the rules, the state pointer and the reload
	 * state, held and done together (ro.h): two calls where there were
	 * five (the pools' table lies against the filter, the handler's pages
	 * side by side).  A seal needs each page read-only first: not held. */
	if (!seal)
		ro_hold();
	for (size_t i = 0; i < img->n_pools; i++) {
		const struct pimg_pool *pp = pimg_pool(img, i);
		struct shim_pool *sp = &st->pools[i];
		/* Learning unprotects what is written: never sealed. */
		unsigned flags = (img->protection == POLICY_PROT_SEAL && img->mode != POLICY_MODE_LEARN
					  ? PMALLOC_POOL_SEAL : 0) | POOL_INTERPOSED;
		sp->pool = pool_create(pimg_str(img, pp->name), flags, pp->max_bytes);
		if (!sp->pool)
			return unarmed(installed, held_released(seal, -ENOMEM));
		fault_install_for_arm();         /* before any pool can be protected */
		installed = true;
		snprintf(sp->pool->policy, sizeof(sp->pool->policy), "%s", policy_name);
		sp->pool->index = (int)i;
		/* Learning takes what a proposal will: until the first trigger. */
		sp->until_trigger = pp->take == POLICY_TAKE_UNTIL_TRIGGER || img->mode == POLICY_MODE_LEARN;
		uint32_t named_calls = 0;
		for (size_t t = 0; t < pp->n_triggers; t++) {
			const struct pimg_trigger *tr = pimg_pool_trigger(img, pp, t);
			if (tr->kind == POLICY_TRIGGER_ON_CALL) {
				named_calls |= 1u << tr->call;
			} else if (tr->kind == POLICY_TRIGGER_ON_WAIT) {
				sp->wait_mask = POLICY_WAIT_CALLS;
			} else if (tr->kind == POLICY_TRIGGER_AFTER) {
				if (!sp->after_ns || tr->after_ns < sp->after_ns)
					sp->after_ns = tr->after_ns;
			} else if (tr->kind == POLICY_TRIGGER_MANUAL) {
				sp->manual = true;
				st->has_manual = true;
			}
		}
		/* A call named by on-call fires on any thread, as it always did. */
		sp->wait_mask &= ~named_calls;
		sp->call_mask = named_calls | sp->wait_mask;
		if (sp->after_ns)
			snprintf(sp->after_text, sizeof(sp->after_text), "after:%llums",
				 (unsigned long long)(sp->after_ns / 1000000u));
		st->call_mask |= sp->call_mask;
		st->named_call_mask |= named_calls;
		if (sp->wait_mask)
			st->wait_pools |= 1u << i;
		if (img->mode == POLICY_MODE_LEARN)
			st->has_manual = true;   /* read pmallocd's orders: pmallocctl learn-flush */
		debug_printf("pool \"%s\": %u sites, %u wrappers, %u triggers, max_bytes %llu",
			     pimg_str(img, pp->name), pp->n_sites, pp->n_wrappers, pp->n_triggers,
			     (unsigned long long)pp->max_bytes);
	}
	st->n_pools = img->n_pools;
	st->lean_waits = img->mode == POLICY_MODE_ENFORCE && !st->has_manual;
	if (img->mode == POLICY_MODE_AUDIT)
		fault_enable_audit();
	st->rules_changed = rules_changed;
	r = arm_state(st, exe, mem, len, own_map, seal);
	const char *left = "armed state";
	int released = seal ? 0 : ro_release(&left);
	if (released < 0) {
		/* The pointer's page may be writable still: opened for sure, the
		 * state unpublished, and closed again, as when nothing is armed. */
		say("the %s cannot be made read-only: %s (running unprotected)", left, strerror(-released));
		if (shim && os_protect_rw(&shim_ro, sizeof(shim_ro)) == 0) {
			site_armed = NULL;
			shim = NULL;
		}
		r = released;
	}
	if (r < 0)
		return unarmed(installed, r);
	interpose_armed();
	respawn_init(st);          /* its fork handler before the timer's */
	trigger_init(st);
	return 0;
}

/* arm()'s middle: the rules resolved, the fault handler armed, the state
 * published and frozen (held: arm() releases), with the reload state. */
static int arm_state(struct shim_state *st, const char *exe, void *mem, size_t len, bool own_map, bool seal)
{
	const struct pimg_header *img = st->image;
	int r = resolve_init(st, exe);
	if (r < 0)
		return r;
	log_unmatched(img);
	if (own_map && (r = make_ro(mem, len, seal)) < 0)
		return r;
	/* What a write into these pools gets, kept read-only by fault.c: the
	 * one place the mode is decided; learn needs its tables first. */
	struct pmalloc_pool *pools[SHIM_POOLS_MAX];
	for (size_t i = 0; i < st->n_pools; i++)
		pools[i] = st->pools[i].pool;
	enum fault_mode fm = img->mode == POLICY_MODE_AUDIT ? FAULT_AUDIT
			     : img->mode == POLICY_MODE_LEARN && learn_init(st) ? FAULT_LEARN : FAULT_ENFORCE;
	if (fm == FAULT_LEARN)
		learn_flush_init();
	else if ((r = learn_tables_freeze()) < 0)
		return r;
	r = fault_arm(fm, pools, st->n_pools, fm == FAULT_LEARN ? learn_let_through : NULL,
		      fm == FAULT_LEARN ? learn_window_let_through : reload_let_through, seal);
	if (r < 0)
		return r;
	/* Published in the page frozen right after: a write into the shim's
	 * data can neither disarm malloc nor point it at a forged state. */
	site_armed = site_arm();
	shim = st;
	if ((r = make_ro(&shim_ro, sizeof(shim_ro), seal)) < 0) {
		site_armed = NULL;
		shim = NULL;
		return r;
	}
	reload_init(st);           /* its page beside the state's: frozen with it */
	return 0;
}

/* The one list of the shim's read-only pages (ro.h).  These are frozen by
 * their owners at times of their own; listed, each is checked against
 * this kernel's page at start-up, so that none is left writable unsaid.
 * A page static in its owner's file is lent as its const ro_span.  Every
 * RO_PAGE-aligned page of the library must be here: ro_pages.sh counts
 * them in the library's symbols against the count said below. */
static int list_span(const char *name, const struct ro_span *s)
{
	return ro_register(name, s->p, s->len, true);
}

static int list_ro(void)
{
	int r = 0;
	r |= ro_register("libc's entry points", &libc_ro, sizeof(libc_ro), true);
	r |= list_span("process role", &life_ro_span);
	r |= list_span("pools' flags and caps", &pool_ro_span);
	r |= list_span("fault decision", &fault_ro_span);
	r |= list_span("fault handler's program", &fault_prog_ro_span);
	r |= list_span("program's exported symbols", &dynsym_ro_span);
	r |= list_span("site rules and tables", &resolve_ro_span);
	r |= list_span("reload window", &reload_ro_span);
	r |= list_span("learn tables", &learn_ro_span);
	r |= list_span("pmallocd connection", &client_ro_span);
	r |= ro_register("kernel probe", &os_ro, sizeof(os_ro), true);
	r |= ro_register("heap table", &heap_page, sizeof(heap_page), true);
	r |= ro_register("arena's units", &units_ro, sizeof(units_ro), true);
	r |= ro_register("core hooks", &core_hooks_ro, sizeof(core_hooks_ro), true);
	r |= ro_register("site filter", &site_policy, sizeof(site_policy), true);
	r |= ro_register("armed state", &shim_ro, sizeof(shim_ro), true);
	return r < 0 ? -EINVAL : 0;
}

static void shim_init(void)
{
	int saved = errno;
	int busy = shim_busy_enter();
	const char *d = secure_getenv("PMALLOC_DEBUG");
	pm_debug = d && strcmp(d, "1") == 0;
	/* Who this process is, read once: the HELLO's comm, the client's and
	 * the journal's start-up record, and what a policy file's rules are
	 * matched with.  The HELLO goes out first: pmallocd identifies this
	 * process (its own round trip through /proc) while the rest of the
	 * start-up below runs, and load_policy() then waits only for what is
	 * left of it.  No call below it depends on its answer. */
	char exe[4096], comm[64];
	read_identity(exe, sizeof(exe), comm, sizeof(comm));
	int started = client_start(socket_path(), comm);
	/* What os.c probed is frozen (the page size and whether mseal is
	 * used decide every protect): when it cannot be, nothing is armed. */
	int frozen = os_init();
	life_init();               /* its fork handler first: the others read the role */
	set_hooks();
	heap_init();
	/* libc's entry points the interposers call: resolved now, read-only
	 * from here on (libc.h). */
	if (libc_freeze() < 0)
		frozen = frozen < 0 ? frozen : -ENOMEM;
	debug_printf("heap allocator: %s (%u allocations from glibc while finding it)", heap_name(),
		     heap_bootstrap_count());
	client_init(exe, comm);

	struct policy_image_buf in = { 0 };
	/* The load (the daemon's answer, or the file's parse and compile) in
	 * the shim's own memory, so that it leaves no holes in the program's
	 * heap (scratch.c); what arming builds to keep, in the heap. */
	scratch_begin();
	int loaded = load_policy(started, exe, comm, &in);
	scratch_pause(true);
	/* Where reports go is fixed now, read-only like the policy. */
	int r = client_freeze();
	const char *left = "list of read-only pages";
	int listed = list_ro();
	if (listed == 0)
		listed = ro_freeze_all(false, &left);
	debug_printf("read-only pages: %zu listed (and the list's own)", ro_count());
	if (listed < 0) {
		say("the %s cannot be made read-only on this kernel (%zu-byte pages): %s (running unprotected)",
		    left, os_page_size, strerror(-listed));
		loaded = 0;
	}
	if (frozen < 0 || r < 0) {
		say("cannot make the shim's own state read-only: %s (running unprotected)",
		    strerror(-(frozen < 0 ? frozen : r)));
		loaded = 0;
	}
	if (loaded > 0) {
		r = arm(&in, exe);
		if (r < 0)
			debug_printf("cannot arm the policy for %s: %s; running unprotected", exe, strerror(-r));
		else
			rules_msg_send(RULES_MSG_RULES);   /* after the handshake: for status */
	}
	/* Nothing armed (no policy, or it could not be): the state pointer's
	 * page read-only all the same, NULL, so that a write cannot make the
	 * shim believe a forged state (the fault handler's report reads it:
	 * tamper.sh's api_tamper api). */
	if (!shim && make_ro(&shim_ro, sizeof(shim_ro), false) < 0)
		debug_printf("cannot make the (unarmed) state pointer read-only");
	/* The armed copy is the state's, read-only: none stays writable. */
	if (in.image) {
		explicit_bzero(in.image, in.len);
		heap_free(in.image);
	}
	scratch_end();
	shim_busy_leave(busy);
	errno = saved;
}

__attribute__((constructor)) static void shim_constructor(void)
{
	shim_init();
}
