/*
 * init.c - start-up of the interposition: which policy applies to this
 * process (from pmallocd, else the policy file), its pools, its symbols and
 * its triggers; then the state is made read-only and armed.
 *
 * Runs once, as a constructor of the preloaded library, before the
 * program's own constructors and main.  Fails open: any problem leaves the
 * program running unprotected, said once on stderr when it is the policy
 * file's fault, otherwise only under PMALLOC_DEBUG=1.  Its allocations go
 * to libc (shim_busy).  Never exits, aborts or fails the program, and never
 * leaves a state half armed: the shim's state is published (shim) only
 * once it is complete and read-only.
 */
#define _GNU_SOURCE
#include "shim.h"
#include "site.h"
#include "client.h"
#include "fault.h"
#include "fmt.h"
#include "heap.h"
#include "learn.h"
#include "os.h"
#include "rules_msg.h"
#include "pmalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_CONF POLICY_DEFAULT_FILE
#define DEFAULT_SOCKET POLICY_DEFAULT_SOCKET
#define HANDSHAKE_TIMEOUT_MS 100

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
		n = read(fd, comm, comm_len - 1);
		comm[n > 0 ? n : 0] = '\0';
		comm[strcspn(comm, "\n")] = '\0';
		close(fd);
	}
}

/* pmallocd's answer (r from client_wait) as the policy set: 1, or 0 for
 * none. */
static int take_daemon_answer(int r, char *text, uint64_t gen, struct policy_set **ret,
			      uint64_t *ret_generation, bool *ret_from_daemon)
{
	char err[POLICY_ERR_MAX];
	if (r == 0) {
		debug_printf("pmallocd has no policy for this process");
		return 0;
	}
	r = policy_set_load_string(text, "pmallocd", ret, err, sizeof(err));
	free(text);
	if (r < 0) {
		say("policy from pmallocd refused: %s (running unprotected)", err);
		return 0;
	}
	*ret_generation = gen;
	*ret_from_daemon = true;
	return 1;
}

/* The policy set for this process: 1 with *ret, 0 for none, never fails.
 *
 * pmallocd is asked first.  A healthy daemon answers within a millisecond;
 * after HANDSHAKE_TIMEOUT_MS the policy file is read (the fallback needs it
 * anyway), and when it sets a longer daemon.handshake_timeout_ms the wait
 * for the daemon goes on until then.  So the setting costs nothing when the
 * daemon is well, and no process reads the file only to learn a timeout. */
static int load_policy(struct policy_set **ret, uint64_t *ret_generation, bool *ret_from_daemon)
{
	const char *sock = secure_getenv("PMALLOC_SOCKET");
	if (!sock || !*sock)
		sock = DEFAULT_SOCKET;
	char *text = NULL, err[POLICY_ERR_MAX];
	uint64_t gen = 0;
	int r = client_start(sock);
	if (r == 0)
		r = client_wait(HANDSHAKE_TIMEOUT_MS, &text, &gen);
	if (r >= 0)
		return take_daemon_answer(r, text, gen, ret, ret_generation, ret_from_daemon);
	debug_printf("no answer from pmallocd at %s: %s; reading the policy file", sock, strerror(-r));

	const char *conf = secure_getenv("PMALLOC_CONF");
	if (!conf || !*conf)
		conf = DEFAULT_CONF;
	struct policy_set *file = NULL;
	int f = policy_set_load_file(conf, &file, err, sizeof(err));
	if (r == -ETIMEDOUT && f == 0 && file->daemon.handshake_timeout_ms > HANDSHAKE_TIMEOUT_MS) {
		r = client_wait(file->daemon.handshake_timeout_ms - HANDSHAKE_TIMEOUT_MS, &text, &gen);
		if (r >= 0) {
			policy_set_free(file);
			return take_daemon_answer(r, text, gen, ret, ret_generation, ret_from_daemon);
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
	*ret = file;
	return 1;
}

static int arm(const struct policy_set *set, const struct policy *pol, uint64_t generation)
{
	void *mem;
	size_t len = ALIGN_UP(sizeof(struct shim_state), os_page_size);
	int r = os_map(len, &mem);
	if (r < 0)
		return r;
	struct shim_state *st = mem;
	st->set = set;
	st->policy = pol;
	st->generation = generation;
	st->match_all = -1;
	st->start_ns = os_monotonic_ns(false);
	if (pol->n_pools > SHIM_POOLS_MAX) {
		say("policy \"%s\" has %zu pools, more than the %d supported; running unprotected",
		    pol->name, pol->n_pools, SHIM_POOLS_MAX);
		return -E2BIG;
	}
	for (size_t i = 0; i < pol->n_pools; i++) {
		const struct policy_pool *pp = &pol->pools[i];
		struct shim_pool *sp = &st->pools[i];
		/* Learning unprotects what is written: never sealed. */
		unsigned flags = pol->protection == POLICY_PROT_SEAL && pol->mode != POLICY_MODE_LEARN
					 ? PMALLOC_POOL_SEAL : 0;
		sp->pool = pool_create(pp->name, flags);
		if (!sp->pool)
			return -ENOMEM;
		fault_install();                 /* before any pool can be protected */
		snprintf(sp->pool->policy, sizeof(sp->pool->policy), "%s", pol->name);
		sp->pool->max_bytes = pp->max_bytes;
		sp->pool->index = (int)i;
		atomic_store(&sp->pool->mode, pol->mode == POLICY_MODE_AUDIT ? POOL_AUDIT : POOL_ENFORCE);
		sp->spec = pp;
		for (size_t t = 0; t < pp->n_triggers; t++) {
			const struct policy_trigger *tr = &pp->triggers[t];
			if (tr->kind == POLICY_TRIGGER_ON_CALL) {
				sp->call_mask |= 1u << tr->call;
			} else if (tr->kind == POLICY_TRIGGER_AFTER) {
				if (!sp->after_ns || tr->after_ns < sp->after_ns)
					sp->after_ns = tr->after_ns;
			} else if (tr->kind == POLICY_TRIGGER_MANUAL) {
				sp->manual = true;
				st->has_manual = true;
			}
		}
		if (sp->after_ns)
			snprintf(sp->after_text, sizeof(sp->after_text), "after:%llums",
				 (unsigned long long)(sp->after_ns / 1000000u));
		st->call_mask |= sp->call_mask;
		if (pol->mode == POLICY_MODE_LEARN)
			st->has_manual = true;   /* read pmallocd's orders: pmallocctl learn-flush */
		for (size_t s = 0; s < pp->n_sites; s++)
			if (!pp->sites[s].object && strcmp(pp->sites[s].function, "*") == 0 && st->match_all < 0)
				st->match_all = (int)i;
		debug_printf("pool \"%s\": %zu sites, %zu wrappers, %zu triggers, max_bytes %llu", pp->name,
			     pp->n_sites, pp->n_wrappers, pp->n_triggers, (unsigned long long)pp->max_bytes);
	}
	st->n_pools = pol->n_pools;
	if (pol->mode == POLICY_MODE_AUDIT)
		fault_enable_audit();
	r = resolve_init(st);
	if (r < 0)
		return r;
	os_protect_ro(mem, len);
	if (pol->mode == POLICY_MODE_LEARN)
		learn_init(st);
	site_arm();
	shim = st;
	trigger_init(st);
	return 0;
}

void shim_init(void)
{
	int saved = errno;
	int busy = shim_busy_enter();
	const char *d = secure_getenv("PMALLOC_DEBUG");
	pm_debug = d && strcmp(d, "1") == 0;
	os_init();
	heap_init();
	debug_printf("heap allocator: %s (%u allocations from glibc while finding it)", heap_name(),
		     heap_bootstrap_count());
	/* Who this process is, read once: the client's and the journal's
	 * start-up record, and what a policy file's rules are matched with. */
	char exe[4096], comm[64];
	read_identity(exe, sizeof(exe), comm, sizeof(comm));
	client_init(exe, comm);

	struct policy_set *set = NULL;
	uint64_t generation = 0;
	bool from_daemon = false;
	if (load_policy(&set, &generation, &from_daemon) > 0) {
		/* pmallocd already matched this process by what the kernel says. */
		const struct policy *pol = from_daemon ? (set->n_policies ? &set->policies[0] : NULL)
						       : policy_set_match(set, exe, comm, getuid());
		if (!pol) {
			debug_printf("no policy matches %s (comm %s, uid %u)", exe, comm, (unsigned)getuid());
			policy_set_free(set);
		} else {
			debug_printf("policy \"%s\" (%s, %s) applies to %s%s", pol->name,
				     policy_mode_name(pol->mode),
				     pol->protection == POLICY_PROT_SEAL ? "seal" : "mprotect", exe,
				     from_daemon ? ", from pmallocd" : "");
			int r = arm(set, pol, generation);
			if (r < 0)
				debug_printf("cannot arm policy \"%s\": %s; running unprotected", pol->name,
					     strerror(-r));
			else
				rules_msg_send(RULES_MSG_RULES);   /* after the handshake: for status */
		}
	}
	shim_busy_leave(busy);
	errno = saved;
}

__attribute__((constructor)) static void shim_constructor(void)
{
	shim_init();
}
