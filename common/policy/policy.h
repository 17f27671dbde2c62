/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * policy.h - the policy model, shared by the shim and pmallocd.
 *
 * One parser (libconfig) and one matcher serve both sides: pmallocd reads
 * /etc/pmalloc.conf, picks the policy for a client with policy_set_match()
 * and hands out its compiled image (policy_image.h); the shim parses a file
 * (PMALLOC_CONF) only when no daemon answers, matches the same way and
 * compiles the policy with the same code.  The model lives only until it is
 * compiled: nothing reads it at run time.  Every check a hostile file needs lives here: unknown
 * keys, wrong types, bad globs, duplicate names, bad durations and sizes.
 *
 * This code allocates with malloc and calls libconfig: in the shim it only
 * runs outside interposition (during init, with the shim's re-entrancy guard
 * set) and never from a signal handler.
 */
#ifndef PMALLOC_POLICY_H
#define PMALLOC_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The defaults of pmalloc.conf(5) and pmallocd(8), for every program of the project. */
#define POLICY_DEFAULT_FILE "/etc/pmalloc.conf"
#define POLICY_DEFAULT_SOCKET "/run/pmalloc/pmallocd.sock"

#define POLICY_NAME_MAX 63          /* policy and pool names: [A-Za-z0-9_.-]{1,63} */
#define POLICY_ERR_MAX 512
/* The shim applies at most this many site and wrapper rules by function
 * name to one loaded object: those whose object glob fits it (a rule with
 * none fits every object), wrappers first, then in the file's order.  Any
 * beyond are not applied there, and said (pmallocctl status, PMALLOC_DEBUG,
 * the journal); pmallocctl propose pins the rest of an object's sites by
 * offset, which have no such limit. */
#define POLICY_OBJECT_NAME_RULES_MAX 256

/* learn: pools protect as usual, a write after protection marks its sites
 * as written and is let through for good; never killed (learn.c). */
enum policy_mode { POLICY_MODE_ENFORCE, POLICY_MODE_AUDIT, POLICY_MODE_LEARN };
/* "enforce", "audit", "learn". */
const char *policy_mode_name(enum policy_mode m);
enum policy_protection { POLICY_PROT_MPROTECT, POLICY_PROT_SEAL };
/* on-wait: the first call of POLICY_WAIT_CALLS made by the process's
 * main thread (the one that ran main(): a server's first wait for events,
 * whatever its event loop calls, once its own start-up is done, whatever
 * other threads do meanwhile); see trigger.c for the fallback. */
enum policy_trigger_kind { POLICY_TRIGGER_ON_CALL, POLICY_TRIGGER_AFTER, POLICY_TRIGGER_MANUAL,
			   POLICY_TRIGGER_ON_WAIT };
/* always: a pool takes its sites' allocations for the life of the process;
 * until-trigger: until its first trigger fires, the heap's after (counted,
 * said once per site). */
enum policy_take { POLICY_TAKE_ALWAYS, POLICY_TAKE_UNTIL_TRIGGER };
/* "always", "until-trigger". */
const char *policy_take_name(enum policy_take t);

/* The libc functions an on-call trigger may name (the shim interposes each). */
enum policy_call {
	POLICY_CALL_LISTEN, POLICY_CALL_ACCEPT, POLICY_CALL_ACCEPT4,
	POLICY_CALL_EPOLL_WAIT, POLICY_CALL_EPOLL_PWAIT, POLICY_CALL_POLL,
	POLICY_CALL_PPOLL, POLICY_CALL_SELECT, POLICY_CALL_PSELECT,
	POLICY_CALL_SETUID, POLICY_CALL_SETGID, POLICY_CALL_SETRESUID,
	POLICY_CALL_SETRESGID, POLICY_CALL_SETEUID, POLICY_CALL_SETEGID,
	POLICY_CALL_CHROOT, POLICY_CALL_PTHREAD_CREATE, POLICY_CALL_FORK,
	POLICY_CALL_DAEMON, POLICY_CALL_EXECVE,
	POLICY_CALL_EPOLL_PWAIT2, POLICY_CALL_SIGSUSPEND, POLICY_CALL_SIGWAITINFO,
	POLICY_CALL_SIGTIMEDWAIT, POLICY_CALL_PAUSE, POLICY_CALL_SIGWAIT,
	POLICY_CALL__COUNT
};
/* The calls by which a program waits for events (or signals): what on-wait
 * fires on, and what ends a reload window (reload.c).  Not pthread_join: a
 * main thread may join a helper in the middle of its start-up. */
#define POLICY_WAIT_CALLS \
	(1u << POLICY_CALL_EPOLL_WAIT | 1u << POLICY_CALL_EPOLL_PWAIT | 1u << POLICY_CALL_EPOLL_PWAIT2 | \
	 1u << POLICY_CALL_POLL | 1u << POLICY_CALL_PPOLL | 1u << POLICY_CALL_SELECT | \
	 1u << POLICY_CALL_PSELECT | 1u << POLICY_CALL_ACCEPT | 1u << POLICY_CALL_ACCEPT4 | \
	 1u << POLICY_CALL_SIGSUSPEND | 1u << POLICY_CALL_SIGWAITINFO | 1u << POLICY_CALL_SIGTIMEDWAIT | \
	 1u << POLICY_CALL_PAUSE | 1u << POLICY_CALL_SIGWAIT)
/* "listen" for POLICY_CALL_LISTEN, ...; NULL when out of range. */
const char *policy_call_name(enum policy_call c);
/* The call named name, or -1. */
int policy_call_from_name(const char *name);

struct policy_trigger {
	enum policy_trigger_kind kind;
	enum policy_call call;       /* POLICY_TRIGGER_ON_CALL */
	uint64_t after_ns;           /* POLICY_TRIGGER_AFTER: from process start */
};

/* A site rule, split: "[OBJECT-GLOB:]FUNCTION-GLOB", or a call site by its
 * offset in an object, "OBJECT-GLOB[@BUILD-ID]:+0xOFFSET" (the return
 * address of the allocation call, less the object's load bias: what fault
 * reports print as object+0xOFFSET). */
struct policy_site {
	char *object;                /* fnmatch glob on the object's path or basename; NULL: any object */
	char *function;              /* fnmatch glob on the symbol name; "+0xOFFSET" for an offset site */
	char *build_id;              /* offset sites: lower-case hex the object's build-id must equal; NULL: any */
	uint64_t offset;             /* offset sites */
	bool by_offset;
};

struct policy_pool {
	char *name;
	struct policy_site *sites;
	size_t n_sites;
	char **wrappers;             /* function names (globs allowed) to look through */
	size_t n_wrappers;
	struct policy_trigger *triggers;
	size_t n_triggers;
	uint64_t max_bytes;          /* 0: no cap */
	enum policy_take take;       /* take = "always" (default) | "until-trigger" */
	uint32_t roles;              /* roles = [...]: role.h's mask; 0 (absent): every role */
	int line;
};

struct policy {
	char *name;
	char **match_exe;            /* fnmatch globs on the real executable path */
	size_t n_match_exe;
	char **match_comm;           /* globs on /proc/PID/comm */
	size_t n_match_comm;
	uid_t *match_uid;
	size_t n_match_uid;
	enum policy_mode mode;
	enum policy_protection protection;
	struct policy_pool *pools;
	size_t n_pools;
	int line;
};

struct policy_daemon_settings {
	char *socket;                /* default "/run/pmalloc/pmallocd.sock" */
	unsigned int handshake_timeout_ms;   /* default 100 */
	unsigned int report_burst;           /* default 20 */
	unsigned int report_interval_s;      /* default 10 */
};

struct policy_set {
	int version;                 /* must be 1 */
	struct policy_daemon_settings daemon;
	struct policy *policies;
	size_t n_policies;
	/* When the file read was last written (its mtime, microseconds since
	 * the epoch, from the fstat of the descriptor read); 0 for a text. */
	uint64_t written_us;
};

/* Whether a policy file with status st may be read by a process whose
 * effective uid is euid: for root, only a file owned by root that neither
 * group nor others can write (a file others can write is their input to
 * root's processes, whose parser then runs as root); anyone else reads what
 * the kernel lets it.  0, or -EPERM and err ("FILE: refused: ...").  The one
 * rule for pmallocd, pmallocctl check and the shim's own reading. */
struct stat;
int policy_file_trusted(const char *path, const struct stat *st, unsigned int euid, char *err,
			size_t errlen);
/* Parse and validate.  0 and *ret on success; on failure -errno (-EINVAL for
 * a bad file, -EPERM for one policy_file_trusted() refuses for this
 * process, -ENOENT etc. for I/O) and err holds "FILE:LINE: message" (or
 * "FILE: message" where no line applies).  name labels text in messages. */
int policy_set_load_file(const char *path, struct policy_set **ret, char *err, size_t errlen);
int policy_set_load_string(const char *text, const char *name, struct policy_set **ret,
			   char *err, size_t errlen);
void policy_set_free(struct policy_set *set);

/* The C library and the loader: glibc's objects (libc, ld.so, the
 * libraries split from libc, the name-service and gconv modules), by path
 * or file name.  What they allocate for themselves is their state, which
 * they write again on events of their own (a lookup that first needs a
 * name-service module, a dlopen, a time zone change, setenv): a site rule
 * fits one only when it names the object without a glob (the shim), and
 * pmallocctl propose names none.  A few string compares. */
bool policy_object_is_glibc(const char *path);

/* The first policy whose match fits (every given criterion must fit: exe
 * glob AND comm glob AND uid list, each only when present; a policy with
 * no criterion matches nothing); NULL when none does. */
const struct policy *policy_set_match(const struct policy_set *set, const char *exe,
				      const char *comm, uid_t uid);

/* Durations "250ms", "2s", "1m", "1h" (integer + unit) -> ns; -EINVAL if bad. */
int policy_parse_duration(const char *s, uint64_t *ret_ns);

#endif
