/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * wire.h - the messages between the shim, pmallocd and pmallocctl.
 *
 * Transport: a SOCK_SEQPACKET unix socket (one message per packet, so a
 * message is never split or merged).  The daemon sets SO_PASSCRED and takes
 * the sender's pid/uid from SCM_CREDENTIALS/SO_PEERCRED, never from the
 * message: nothing here identifies the sender (HELLO's comm is a name the
 * process gives itself at will, not an identity).
 *
 * Every message starts with struct pmw_header; the receiver checks magic,
 * version, type and that length equals the packet size (and the fixed size
 * of the type, or the bounds of its variable part) before reading anything
 * else.  Strings are NUL-terminated within their arrays; a receiver forces
 * the last byte to NUL anyway.  Fixed layouts, host byte order (same host).
 *
 * Exchange:
 *   shim -> daemon  PMW_HELLO            (first message; version checked)
 *   daemon -> shim  PMW_POLICY | PMW_NO_POLICY | PMW_REFUSED
 *   shim -> daemon  PMW_PROTECTED        (each protect; from normal context)
 *   shim -> daemon  PMW_REPORT           (a violation record; from the signal handler)
 *   ctl -> daemon   PMW_STATUS_REQ
 *   daemon -> ctl   PMW_STATUS_DATA      (the status as records, in a memfd passed
 *                                         along; then the socket closes)
 *   ctl -> daemon   PMW_PROTECT_REQ      (the manual trigger from pmallocctl)
 *   daemon -> ctl   PMW_STATUS           (what was done, for people; then close)
 *   daemon -> shim  PMW_PROTECT          (protect this pool now; only the process
 *                                         that connected reads it, on receipt, in
 *                                         a thread of the shim's: trigger.c)
 *   shim -> daemon  PMW_RULES            (after the hand-out: each rule resolved or
 *                                         not; again when a dlopen resolves one; the
 *                                         per-site table at each protect)
 *   ctl -> daemon   PMW_STATUS_PID_REQ   (pmallocctl status PID: the detail view;
 *                                         answered with PMW_STATUS_DATA too)
 *   daemon -> shim  PMW_SITES_REQ        (send a fresh site table; read where orders
 *                                         are: a process with a manual or learn pool)
 *   shim -> daemon  PMW_EXITING          (exit has begun: exit(3) or main's return;
 *                                         once, from a process holding a policy)
 *   shim -> daemon  PMW_NOTICE           (the fault handler found replaced behind the
 *                                         shim, or SIGSEGV blocked, and put right:
 *                                         status says it; from normal context)
 */
#ifndef PMALLOC_WIRE_H
#define PMALLOC_WIRE_H

#include "role.h"
#include <stddef.h>
#include <stdint.h>
#include <assert.h>

#define PMW_MAGIC 0x31414d50u        /* "PMA1" */
#define PMW_VERSION 2                /* 2: PMW_POLICY carries a policy image, not text */
#define PMW_MAX_MSG (64 * 1024)      /* no message is larger; larger ones are refused */

/* One line per conversation (the header comment above says who sends
 * what); the numbers are the protocol and never change. */
enum pmw_type {
	PMW_HELLO = 1, PMW_POLICY = 2, PMW_NO_POLICY = 3, PMW_REFUSED = 4,   /* the handshake */
	PMW_PROTECTED = 5, PMW_REPORT = 6, PMW_RULES = 11,                   /* a served process tells */
	PMW_STATUS_REQ = 7, PMW_PROTECT_REQ = 9, PMW_STATUS_PID_REQ = 12,    /* pmallocctl asks, */
	PMW_STATUS = 8,                                                      /* pmallocd answers */
	PMW_PROTECT = 10, PMW_SITES_REQ = 13,                                /* pmallocd orders a process */
	PMW_STATUS_DATA = 14,                                                /* pmallocd answers status */
	PMW_EXITING = 15,                                                    /* a served process tells */
	PMW_NOTICE = 16,                                                     /* a served process tells */
};

struct pmw_header {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t length;                 /* whole message, header included */
	uint32_t reserved;               /* 0 */
};

#define PMW_NAME 64
#define PMW_SYM 128
#define PMW_PATH 256
#define PMW_FRAMES 16
#define PMW_MODULES 8
#define PMW_BUILD_ID 20

/* PMW_HELLO: with PMW_HELLO_COMM, comm is the process's /proc/self/comm
 * as the shim read it at start (NUL-terminated), and pmallocd need not
 * read it again: a process sets its own comm at will (prctl(PR_SET_NAME)),
 * so its word is what the kernel would say.  Without the flag the packet
 * may end before comm (PMW_HELLO_SHORT bytes, as older shims send it). */
#define PMW_HELLO_COMM 0x1u
#define PMW_COMM 16                      /* TASK_COMM_LEN */
struct pmw_hello {
	struct pmw_header h;
	uint32_t flags;                  /* PMW_HELLO_COMM or 0 */
	uint32_t reserved;
	char comm[PMW_COMM];
};
#define PMW_HELLO_SHORT offsetof(struct pmw_hello, comm)

/* PMW_POLICY: h, then image_len bytes of the policy's image
 * (policy_image.h, compiled by pmallocd when it loaded the file; 8-byte
 * aligned in the packet); length == sizeof(struct pmw_policy) + image_len. */
struct pmw_policy {
	struct pmw_header h;
	uint64_t generation;             /* policy set generation in the daemon */
	uint32_t image_len;
	uint32_t reserved;               /* 0 */
	uint64_t image[];
};

/* PMW_NO_POLICY and PMW_REFUSED: h, generation, and a reason for people. */
struct pmw_answer {
	struct pmw_header h;
	uint64_t generation;
	char reason[PMW_SYM];
};

struct pmw_protected {
	struct pmw_header h;
	char policy[PMW_NAME];
	char pool[PMW_NAME];
	char trigger[PMW_NAME];          /* "on-call:listen", "after:2s", "manual" */
	uint64_t generation;
	uint64_t new_bytes;              /* made read-only by this protect */
	uint64_t protected_bytes;        /* pool total */
	uint64_t objects;                /* pool total */
	uint64_t pool_generation;        /* this protect's: 1 the first, then one per reload (reload.c) */
	uint64_t freed_bytes;            /* of protected_bytes, objects the program freed since (a
					  * reload's old configuration): live = protected - freed */
};

struct pmw_module {
	char path[PMW_PATH];
	uint64_t base;                   /* load address in the reporting process */
	uint8_t build_id[PMW_BUILD_ID];
	uint32_t build_id_len;           /* 0 where unknown */
};

struct pmw_frame {
	uint64_t ip;
	uint64_t offset;                 /* ip - module base */
	uint32_t module;                 /* index into modules, PMW_NO_MODULE where unknown */
	uint32_t reserved;
};
#define PMW_NO_MODULE 0xffffffffu

enum pmw_mode { PMW_MODE_ENFORCE = 0, PMW_MODE_AUDIT = 1 };

/* How the protected memory was written. */
enum pmw_cause {
	PMW_CAUSE_STORE = 0,             /* an instruction of the program's (fault_ip) */
	PMW_CAUSE_KERNEL = 1,            /* the kernel, in kernel_call, called from fault_ip */
	PMW_CAUSE_OTHER_THREAD = 2,      /* found changed while another audited write's page was open */
};
#define PMW_KCALL 32

/* The violation record: the one type a violation has from the fault to the
 * journal.  The shim fills it in the fault path (report.c), writes its
 * stderr line and journal entry from it (violation_fmt.c), and sends it as
 * it is; pmallocd checks every field (wire_check_report), takes nothing
 * from it that the kernel or its own registry can tell, and formats it with
 * the same violation_fmt.c.  Strings are raw (escaped when formatted). */
struct pmw_report {
	struct pmw_header h;
	char policy[PMW_NAME];           /* "" for API pools outside any policy */
	char pool[PMW_NAME];
	uint32_t mode;                   /* enum pmw_mode */
	uint32_t n_frames;
	uint64_t generation;
	uint64_t address;                /* faulting data address */
	uint64_t object_start;           /* 0 where no object contains address */
	uint64_t object_size;
	uint64_t offset;                 /* address - object_start */
	char object_site[PMW_SYM];       /* "symbol+0xoff" or "module+0xoff" that allocated it; "" unknown */
	uint64_t fault_ip;               /* 0 unknown */
	char fault_symbol[PMW_SYM];      /* the exported function's "symbol+0xoff" (the shim reads no
					  * symbol file); "" unknown; the daemon resolves frames[0] */
	char exe[PMW_PATH];              /* the shim's word: for module names, never the daemon's exe */
	struct pmw_frame frames[PMW_FRAMES];  /* frames[0] is the faulting instruction */
	uint32_t n_modules;
	uint32_t cause;                  /* enum pmw_cause */
	struct pmw_module modules[PMW_MODULES];
	char kernel_call[PMW_KCALL];     /* PMW_CAUSE_KERNEL: "read", ...; else "" */
	char role[ROLE_NAME_MAX];        /* the writer's role (role.h): "main", "child", ... */
};

/* PMW_EXITING: exit has begun in the sender (exit(3) called, or main
 * returned): a clean end, the stop a service's day ends with, not death by
 * a signal or _exit(2).  Sent once per process, by a process that holds a
 * policy; pmallocd journals it (one entry per process) for pmallocctl
 * ready's count of stops.  An older pmallocd drops the connection, which
 * is ending anyway. */
#define PMW_EXIT_CALLED 1u               /* exit(3) */
#define PMW_EXIT_MAIN 2u                 /* main returned */
struct pmw_exiting {
	struct pmw_header h;
	int32_t status;                  /* exit's argument, main's value */
	uint32_t how;                    /* PMW_EXIT_CALLED or PMW_EXIT_MAIN */
};

struct pmw_status_req {
	struct pmw_header h;
};

/* PMW_NOTICE: what the shim found and put right at a protect or an
 * event-loop call (fault.h's fault_recheck); the journal has the words. */
#define PMW_NOTICE_SEGV_REPLACED 0x1u    /* the SIGSEGV handler replaced by a raw rt_sigaction */
#define PMW_NOTICE_TRAP_REPLACED 0x2u    /* the SIGTRAP one (audit) */
#define PMW_NOTICE_SEGV_BLOCKED 0x4u     /* SIGSEGV blocked behind the shim (a raw mask, a context) */
#define PMW_NOTICE_ALL 0x7u
struct pmw_notice {
	struct pmw_header h;
	uint32_t what;                   /* PMW_NOTICE_* bits, at least one */
	uint32_t reserved;               /* 0 */
};

/* pmallocctl protect PID POOL.  The daemon accepts it from root or from
 * the uid of the process named, for a connected process whose policy has
 * the pool with a "manual" trigger; it answers PMW_STATUS either way. */
struct pmw_protect_req {
	struct pmw_header h;
	int32_t pid;
	uint32_t reserved;               /* 0, or PMW_LEARN_FLUSH (pool then "") */
	char pool[PMW_NAME];
};

/* pmallocctl learn-flush PID: a PMW_PROTECT_REQ with this in reserved and
 * an empty pool, for a process under a learn policy; the shim gets a
 * PMW_PROTECT with an empty pool and writes what it learned. */
#define PMW_LEARN_FLUSH 1u

/* To the shim: protect pool (a policy pool with a "manual" trigger); an
 * empty pool: write the learn-mode results now. */
struct pmw_protect {
	struct pmw_header h;
	uint64_t generation;
	char pool[PMW_NAME];
};

/* PMW_STATUS: h, then text_len bytes of text (NUL included). */
struct pmw_status {
	struct pmw_header h;
	uint32_t text_len;
	uint32_t reserved;
	char text[];
};

/* PMW_RULES: one table of the sender's, replacing the one the daemon
 * holds: what = PMW_RULES_RULES, every rule of the policy handed out (site,
 * wrapper, on-call trigger) and whether it matched something loaded, the
 * unresolved ones first; or PMW_RULES_SITES, the call sites whose objects
 * the pools hold, with their objects and bytes, largest first.  n_rows <=
 * PMW_ROWS are sent of total; unresolved counts all of total.  Each row
 * names a pool of the policy handed out on this connection. */
#define PMW_ROWS 32
enum pmw_rules_what { PMW_RULES_RULES = 1, PMW_RULES_SITES = 2 };
enum pmw_row_kind { PMW_ROW_SITE = 1, PMW_ROW_WRAPPER = 2, PMW_ROW_ON_CALL = 3, PMW_ROW_CALL_SITE = 4 };
/* A rules row: resolved, or why not; a call-site row: PMW_ROW_COUNTED. */
enum pmw_row_state {
	PMW_ROW_RESOLVED = 1,
	PMW_ROW_NO_FUNCTION = 2,         /* no loaded object has a function of that name */
	PMW_ROW_NO_OFFSET = 3,           /* no loaded object fits the object glob (and build-id) */
	PMW_ROW_COUNTED = 4,
	PMW_ROW_NOT_LOADED = 5,          /* its object glob fits no object loaded in this
					  * process yet: it may match one dlopen'ed later
					  * (or in another process); not unresolved */
	PMW_ROW_LATE = 6,                /* a call site of a take = "until-trigger" pool that
					  * allocated after its trigger: objects and bytes that
					  * went to the heap */
	PMW_ROW_DROPPED = 7,             /* a rule by name not applied in an object that more
					  * than POLICY_OBJECT_NAME_RULES_MAX of them fit
					  * (whether or not it matched in another): unresolved */
};

struct pmw_row {
	char pool[PMW_NAME];
	char text[PMW_SYM];              /* the rule as written; a call site "function+0xoff" */
	uint32_t kind;                   /* enum pmw_row_kind */
	uint32_t state;                  /* enum pmw_row_state */
	uint64_t objects;                /* call sites: objects the pool holds from it */
	uint64_t bytes;
};

struct pmw_rules {
	struct pmw_header h;
	char policy[PMW_NAME];
	uint64_t generation;
	uint32_t what;                   /* enum pmw_rules_what */
	uint32_t n_rows;                 /* rows[0, n_rows) are filled */
	uint32_t total;                  /* rows the shim has (>= n_rows) */
	uint32_t unresolved;             /* rules of total that matched nothing */
	struct pmw_row rows[PMW_ROWS];
};

/* pmallocctl status PID: the status of one process, with its rules and
 * its per-site table; answered with PMW_STATUS.  Unless flags has
 * PMW_STATUS_NO_ASK, pmallocd asks the process for a fresh site table
 * (PMW_SITES_REQ, at most once a second), which a later request shows. */
struct pmw_status_pid_req {
	struct pmw_header h;
	int32_t pid;
	uint32_t flags;                  /* 0 or PMW_STATUS_NO_ASK */
};
#define PMW_STATUS_NO_ASK 1u

/* PMW_STATUS_DATA: the answer to PMW_STATUS_REQ and PMW_STATUS_PID_REQ.
 * The packet carries one file descriptor (SCM_RIGHTS): a memfd sealed
 * against writing, growing and shrinking, of exactly data_len bytes (at
 * most PMW_STATUS_DATA_MAX), holding n_records records, so that a status
 * of any number of processes is whole (a packet is at most PMW_MAX_MSG).
 *
 * A record: struct pmw_srec, then n_nums uint64_t numbers, then n_strs
 * NUL-terminated strings (raw: escaped by whoever shows them), then zero
 * padding to a multiple of 8; length covers all of it.  The meaning of
 * each number and string is its index in the type's enum below; a
 * receiver needs at least the count it knows and ignores any beyond it
 * (a newer pmallocd may add some at the end).  Numbers are counts, bytes,
 * ids or durations in microseconds; "unknown" is PMW_SR_NONE.
 *
 * Order: one DAEMON record; WARNING records; with PMW_SR_D_ROOT_VIEW the
 * UNSERVED ones; then PROCESS records, each followed by its POOL records
 * (each followed by the RULE records of that pool) and its SITE records. */
#define PMW_STATUS_DATA_MAX (64u << 20)
#define PMW_SR_NONE UINT64_MAX
struct pmw_status_data {
	struct pmw_header h;
	uint32_t data_len;
	uint32_t n_records;
};

struct pmw_srec {
	uint16_t type;                   /* enum pmw_srec_type */
	uint8_t n_nums;
	uint8_t n_strs;
	uint32_t length;                 /* of the record, this header included; a multiple of 8 */
};

enum pmw_srec_type {
	PMW_SR_DAEMON = 1, PMW_SR_WARNING = 2, PMW_SR_UNSERVED = 3, PMW_SR_PROCESS = 4,
	PMW_SR_POOL = 5, PMW_SR_RULE = 6, PMW_SR_SITE = 7, PMW_SR_GENERATION = 8,
};

/* PMW_SR_DAEMON: pmallocd, its policy file, socket, counters, budgets, journal. */
enum pmw_sr_daemon {
	PMW_SR_D_PID, PMW_SR_D_RUNNING_USEC, PMW_SR_D_GENERATION, PMW_SR_D_POLICIES,
	PMW_SR_D_LOADED_USEC, PMW_SR_D_RELOADS_REFUSED, PMW_SR_D_SOCKET_ACTIVATED,
	PMW_SR_D_CLIENTS, PMW_SR_D_MAX_CLIENTS, PMW_SR_D_ACCEPTED, PMW_SR_D_HANDED, PMW_SR_D_NO_POLICY,
	PMW_SR_D_STATUS_REQUESTS, PMW_SR_D_PROTECTS, PMW_SR_D_REPORTS, PMW_SR_D_PROTECT_REQUESTS,
	PMW_SR_D_PROTECT_SENT, PMW_SR_D_MALFORMED, PMW_SR_D_OVERSIZED, PMW_SR_D_OUT_OF_ORDER,
	PMW_SR_D_FDS_PASSED, PMW_SR_D_SILENT, PMW_SR_D_VANISHED, PMW_SR_D_UNIDENTIFIED, PMW_SR_D_FORGED,
	PMW_SR_D_OVER_CLIENT_LIMIT, PMW_SR_D_WRONG_VERSION, PMW_SR_D_ACCEPT_ERRORS,
	PMW_SR_D_BUDGET_USERS, PMW_SR_D_BUDGET_USER_CONNECTIONS, PMW_SR_D_BUDGET_ALL_CONNECTIONS,
	PMW_SR_D_BUDGET_USER_ENTRIES, PMW_SR_D_BUDGET_INTERVAL_USEC, PMW_SR_D_BUDGET_REFUSED_CONNECTIONS,
	PMW_SR_D_BUDGET_REFUSED_CHILDREN, PMW_SR_D_BUDGET_DROPPED_ENTRIES, PMW_SR_D_BUDGET_SUMMARIES,
	PMW_SR_D_JOURNAL_SENT, PMW_SR_D_JOURNAL_SENT_LATE, PMW_SR_D_JOURNAL_QUEUED,
	PMW_SR_D_JOURNAL_STALLED, PMW_SR_D_JOURNAL_DROPPED_FULL, PMW_SR_D_JOURNAL_DROPPED_ABSENT,
	PMW_SR_D_JOURNAL_DROPPED_ERROR,
	PMW_SR_D_SERVED, PMW_SR_D_EXITED_KEPT, PMW_SR_D_EXITED_MAX, PMW_SR_D_EXITED_FORGOTTEN,
	PMW_SR_D_UNSERVED_MORE,          /* never-checked-in processes past the ones listed */
	PMW_SR_D_FLAGS,                  /* PMW_SR_D_ROOT_VIEW, PMW_SR_D_DETAIL, PMW_SR_D_NO_SUCH */
	PMW_SR_D_PID_ASKED,              /* status PID: the PID; else 0 */
	PMW_SR_D_N_NUMS
};
#define PMW_SR_D_ROOT_VIEW 0x1u          /* the viewer is root: every process listed */
#define PMW_SR_D_DETAIL 0x2u             /* the answer to status PID */
#define PMW_SR_D_NO_SUCH 0x4u            /* status PID: no such process (or not the viewer's) */
enum pmw_sr_daemon_str { PMW_SR_D_POLICY_FILE, PMW_SR_D_SOCKET, PMW_SR_D_N_STRS };

/* PMW_SR_WARNING: what policy_lint() says of the file in force. */
enum pmw_sr_warning { PMW_SR_W_LINE, PMW_SR_W_N_NUMS };
enum pmw_sr_warning_str { PMW_SR_W_TEXT, PMW_SR_W_N_STRS };

/* PMW_SR_UNSERVED: a process a policy names that never checked in. */
enum pmw_sr_unserved { PMW_SR_U_PID, PMW_SR_U_UID, PMW_SR_U_N_NUMS };
enum pmw_sr_unserved_str { PMW_SR_U_EXE, PMW_SR_U_COMM, PMW_SR_U_POLICY, PMW_SR_U_N_STRS };

/* PMW_SR_PROCESS: a process served (connected) or exited. */
/* PMW_SR_DISCONNECTED: it closed its connection (a daemon that closes
 * every descriptor) but runs still, with what it was handed. */
enum pmw_sr_state { PMW_SR_ALIVE = 0, PMW_SR_EXITED = 1, PMW_SR_GONE_CONNECTED = 2, PMW_SR_DISCONNECTED = 3 };
enum pmw_sr_process {
	PMW_SR_P_EXITED,                 /* 0 served (connected), 1 exited */
	PMW_SR_P_PID, PMW_SR_P_UID,      /* the uid the process runs as now (exited: when it connected) */
	PMW_SR_P_VIA_PID,                /* 0, or the process whose connection a forked child uses */
	PMW_SR_P_HAS_POLICY, PMW_SR_P_MODE,     /* enum policy_mode's number */
	PMW_SR_P_GENERATION,
	PMW_SR_P_STATE,                  /* enum pmw_sr_state */
	PMW_SR_P_AGE_USEC,               /* alive: served for; exited, disconnected: since then; else NONE */
	PMW_SR_P_EXE_DELETED, PMW_SR_P_POOLS_UNTRACKED, PMW_SR_P_VIOLATIONS,
	PMW_SR_P_VIOLATIONS_NOT_LOGGED, PMW_SR_P_PROTECTS_NOT_LOGGED,
	PMW_SR_P_RULES_KNOWN,            /* 1 once it said its rules */
	PMW_SR_P_RULES_TOTAL, PMW_SR_P_RULES_LISTED, PMW_SR_P_RULES_UNRESOLVED,
	PMW_SR_P_SITES_KNOWN, PMW_SR_P_SITES_TOTAL, PMW_SR_P_SITES_AGE_USEC,
	PMW_SR_P_SITES_ASKED_USEC,       /* a fresh table asked for that long ago, not come; else NONE */
	PMW_SR_P_RULES_REFUSED,          /* rules and sites messages over the rate limit */
	PMW_SR_P_ROLE,                   /* its role's depth (role.h): 0 main, 1 child, ... */
	PMW_SR_P_ROLE_UNPROTECTED,       /* 1: no pool of its policy protects in its role */
	PMW_SR_P_HANDLER_NOTICES,        /* PMW_NOTICEs received: the fault handler put right */
	PMW_SR_P_HANDLER_WHAT,           /* their PMW_NOTICE_* bits, together */
	PMW_SR_P_N_NUMS
};
enum pmw_sr_process_str { PMW_SR_P_EXE, PMW_SR_P_POLICY, PMW_SR_P_COMM, PMW_SR_P_N_STRS };

/* PMW_SR_POOL: a pool of the process above. */
enum pmw_sr_pool {
	PMW_SR_O_PROTECTED,              /* 1: a protect reached it; 0: not yet */
	PMW_SR_O_PROTECTED_BYTES, PMW_SR_O_OBJECTS, PMW_SR_O_PROTECTS, PMW_SR_O_N_NUMS
};
enum pmw_sr_pool_str { PMW_SR_O_NAME, PMW_SR_O_POLICY, PMW_SR_O_LAST_TRIGGER, PMW_SR_O_N_STRS };

/* PMW_SR_GENERATION: a protect of the pool above that made memory
 * read-only (its generations: 1 the first trigger's, then one per reload),
 * after the pool's rules; the latest PMW_SR_G_KEPT of them, oldest first. */
enum pmw_sr_generation {
	PMW_SR_G_GENERATION, PMW_SR_G_NEW_BYTES, PMW_SR_G_PROTECTED_BYTES,
	PMW_SR_G_AGE_USEC,               /* how long ago */
	PMW_SR_G_FREED_BYTES,            /* of PROTECTED_BYTES, freed by the program then */
	PMW_SR_G_N_NUMS
};
enum pmw_sr_generation_str { PMW_SR_G_TRIGGER, PMW_SR_G_N_STRS };
#define PMW_SR_G_KEPT 8

/* PMW_SR_RULE: a rule of the pool above (enum pmw_row_kind, pmw_row_state). */
enum pmw_sr_rule { PMW_SR_R_KIND, PMW_SR_R_STATE, PMW_SR_R_N_NUMS };
enum pmw_sr_rule_str { PMW_SR_R_TEXT, PMW_SR_R_N_STRS };

/* PMW_SR_SITE: a call site of the process above (status PID). */
enum pmw_sr_site { PMW_SR_S_OBJECTS, PMW_SR_S_BYTES, PMW_SR_S_LATE, PMW_SR_S_N_NUMS };  /* LATE: 1 for a PMW_ROW_LATE row */
enum pmw_sr_site_str { PMW_SR_S_POOL, PMW_SR_S_TEXT, PMW_SR_S_N_STRS };

/* To the shim: send a PMW_RULES with the site table now. */
struct pmw_sites_req {
	struct pmw_header h;
	uint64_t generation;
};

static_assert(sizeof(struct pmw_rules) < PMW_MAX_MSG, "rules fit one packet");
static_assert(sizeof(struct pmw_report) < PMW_MAX_MSG, "report fits one packet");
static_assert(sizeof(struct pmw_header) == 16, "header layout");

/* Fill a header. */
static inline void pmw_header_init(struct pmw_header *h, enum pmw_type type, uint32_t length)
{
	h->magic = PMW_MAGIC;
	h->version = PMW_VERSION;
	h->type = (uint16_t)type;
	h->length = length;
	h->reserved = 0;
}

#endif
