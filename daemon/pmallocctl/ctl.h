/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctl.h - the pieces of pmallocctl, the command-line front of pmalloc.
 *
 * Owns the interfaces between pmallocctl's files: the command entry points
 * (each parses its own arguments, prints, and returns a process exit code)
 * and the helpers under them (which return 0 or -errno, write results only
 * on success, and never print).  Nothing here is used by pmallocd or the
 * shim; pmallocctl never writes to the journal, the policy file or the
 * daemon's state: it reads, and asks pmallocd (protect) to pass a request
 * on to a process.
 */
#ifndef PMALLOC_CTL_H
#define PMALLOC_CTL_H

#include "msgid.h"
#include "paths.h"
#include "policy.h"
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>

#define CTL_NAME "pmallocctl"
#define CTL_VERSION PMALLOC_VERSION         /* the Makefile's VERSION (paths.h) */
#define CTL_DEFAULT_CONF POLICY_DEFAULT_FILE
#define CTL_DEFAULT_SOCKET POLICY_DEFAULT_SOCKET
#define CTL_STATUS_TIMEOUT_MS 5000           /* to wait for pmallocd's answer */

/* Exit statuses, as systemctl uses them. */
enum ctl_exit {
	CTL_EXIT_OK = 0,
	CTL_EXIT_FAILURE = 1,
	CTL_EXIT_USAGE = 2,
	CTL_EXIT_NOT_RUNNING = 3,            /* status, protect: no daemon answers */
};

/* An entry of the command table (pmallocctl.c). */
struct ctl_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *synopsis;        /* the command's line(s) in the global usage */
	const char *help;            /* what "pmallocctl NAME --help" adds */
	/* Its options, as getopt_long takes them (ctl_getopt()): each command
	 * has a table of its own, so that an abbreviation ("--so") resolves
	 * against that command's options only. */
	const char *opts;
	const struct option *options;
};

/* Commands: argv[0] is the command name; the return value is the exit status. */
int ctl_cmd_check(int argc, char **argv);
int ctl_cmd_status(int argc, char **argv);
int ctl_cmd_protect(int argc, char **argv);
int ctl_cmd_violations(int argc, char **argv);
int ctl_cmd_preload(int argc, char **argv);
int ctl_cmd_propose(int argc, char **argv);
int ctl_cmd_learn_flush(int argc, char **argv);
int ctl_cmd_sites(int argc, char **argv);
int ctl_cmd_learn(int argc, char **argv);
int ctl_cmd_exercise(int argc, char **argv);
int ctl_cmd_ready(int argc, char **argv);
/* ctl_learn_flush.c: the command line of learn-flush and sites (NAME PID
 * [--socket PATH]) and the learn-flush request to pmallocd: -1 with
 * *ret_pid and *ret_text (pmallocd's answer, as ctl_request()), else the
 * exit status to return (help given, or the error said on stderr). */
int ctl_learn_flush_ask(int argc, char **argv, const char *name, int32_t *ret_pid, char **ret_text);

/* ctl_util.c: the command table main() dispatches from, for the usage,
 * the help and each command's options; set once, first. */
void ctl_commands_set(const struct ctl_command *commands, size_t n);
/* ctl_util.c: the table's entry for name, NULL if none. */
const struct ctl_command *ctl_command(const char *name);
/* ctl_util.c: a missing or unknown command: what (and WORD) and the whole
 * usage on stderr; returns CTL_EXIT_USAGE. */
int ctl_command_error(const char *what, const char *word);
/* ctl_util.c: the usage text, on f. */
void ctl_usage(FILE *f);
/* ctl_util.c: "pmallocctl NAME --help": the command's usage and options on
 * stdout; returns the exit status. */
int ctl_help(const char *name);
/* ctl_util.c: "pmallocctl: WHAT 'WORD'" (WORD escaped; left out when NULL) and a
 * pointer to --help on stderr; returns CTL_EXIT_USAGE. */
int ctl_usage_error(const char *what, const char *word);
/* ctl_util.c: report getopt_long's '?' or ':' for argv (opterr must be 0). */
int ctl_option_error(int c, char **argv);
/* ctl_util.c: getopt_long() over command NAME's options (its entry in the
 * command table; opterr 0) that answers --help and a bad option itself: the
 * next option's value, else -1 with *ret_exit: -1 after the last option, or
 * the exit status to return. */
int ctl_getopt(int argc, char **argv, const char *name, int *ret_exit);
/* Options without a short form (violations). */
#define CTL_OPT_FILE 0x100
#define CTL_OPT_NO_PAGER 0x101
#define CTL_OPT_AFTER_CURSOR 0x102
#define CTL_OPT_SHOW_CURSOR 0x103
#define CTL_OPT_NO_FULL 0x104
#define CTL_OPT_UNIT 0x105
#define CTL_OPT_MIN_TIME 0x106
/* A PID argument: decimal digits only, in [1, INT_MAX]; 0 or -EINVAL. */
int ctl_parse_pid(const char *s, int32_t *ret);

/* ctl_escape.c: making hostile bytes harmless on output. */
#define CTL_ESC_MULTILINE 0x1u               /* keep '\n' and '\t' as they are */
/* pmallocd's strings, escaped by pmallocd already: a backslash passes as
 * is (else "\x0a" would show as "\\x0a"); raw bytes are still escaped. */
#define CTL_ESC_ESCAPED 0x2u
/* Write s[0, n) to f so that none of it can act on a terminal: control
 * characters (C0, DEL, C1), bidirectional overrides, line separators,
 * backslash and bytes that are not UTF-8 become \n, \t, \\, \xHH or \uHHHH. */
void ctl_put_text(FILE *f, const char *s, size_t n, unsigned int flags);
/* As ctl_put_text() for a NUL-terminated string. */
void ctl_put_str(FILE *f, const char *s, unsigned int flags);
/* The same into a new string: 0 and *ret (malloc'ed), or -ENOMEM. */
int ctl_escape(const char *s, size_t n, unsigned int flags, char **ret);
/* Columns s takes on a terminal, counted in code points (s is escaped). */
size_t ctl_text_width(const char *s);
/* A JSON value for s[0, n): a string when s is UTF-8 without NUL (every
 * control and invisible character \u-escaped), otherwise an array of the byte
 * values, as journalctl -o json writes such fields. */
void ctl_put_json(FILE *f, const char *s, size_t n);

/* ctl_time.c: time arguments and timestamps (local time zone unless noted). */
/* Parse a --since TIME (see pmallocctl(8)) relative to now_usec (realtime,
 * µs): 0 and *ret_usec, or -EINVAL (syntax) / -ERANGE (out of range). */
int ctl_parse_time(const char *s, uint64_t now_usec, uint64_t *ret_usec);
/* "YYYY-MM-DD HH:MM:SS" in local time; 0 or -EOVERFLOW / -ENOBUFS. */
int ctl_format_local(uint64_t usec, char *buf, size_t len);
/* "YYYY-MM-DDTHH:MM:SS.uuuuuuZ" (UTC); 0 or -EOVERFLOW / -ENOBUFS. */
int ctl_format_iso_utc(uint64_t usec, char *buf, size_t len);
/* CLOCK_REALTIME in µs. */
uint64_t ctl_now_usec(void);

/* ctl_client.c: send req (req_len bytes, header filled) to pmallocd at path
 * and read its one PMW_STATUS answer.  0 and *ret_text (malloc'ed,
 * NUL-terminated, not yet escaped), or -errno: -ENOENT/-ECONNREFUSED
 * (nobody listens), -ETIMEDOUT/-ECONNRESET (nobody answers), -EBADMSG
 * (malformed reply), -EPROTONOSUPPORT (another protocol version),
 * -EMSGSIZE (reply too large), -ENAMETOOLONG (path). */
int ctl_request(const char *path, int timeout_ms, const void *req, size_t req_len, char **ret_text);
/* ctl_client.c: a SOCK_SEQPACKET connection to path, every wait bounded by
 * timeout_ms (connect too, when the backlog is full): the descriptor, or
 * -errno (-ETIMEDOUT, -ENAMETOOLONG, -EINVAL for ""). */
int ctl_connect(const char *path, int timeout_ms);
/* ctl_client.c: one request and its one answer on a connection of its own
 * (ctl_connect), into mh (descriptors passed with it stay in its control
 * data, the caller's to take): the answer's length, or -errno as
 * ctl_connect, -ETIMEDOUT, -ECONNRESET (closed without an answer). */
ssize_t ctl_exchange(const char *path, int timeout_ms, const void *req, size_t req_len, struct msghdr *mh);
/* ctl_client.c: the socket: arg (--socket) when given, else PMALLOC_SOCKET,
 * else CTL_DEFAULT_SOCKET. */
const char *ctl_socket_path(const char *arg);
/* ctl_client.c: say on stderr why ctl_request() failed with r; returns the
 * exit status (CTL_EXIT_NOT_RUNNING when no daemon answers). */
int ctl_request_error(const char *path, int r);
/* ctl_client.c: the command line of a command about one process (protect,
 * learn-flush, sites): [--socket PATH] [--help], then exactly n_args
 * words (what args says, e.g. "PID and POOL"), the first a PID.  -1 with
 * *ret_socket (the path to use) and *ret_pid set, else the exit status to
 * return (help given, or a usage error said). */
int ctl_process_args(int argc, char **argv, const char *name, const char *args, int n_args,
		     const char **ret_socket, int32_t *ret_pid);
/* ctl_client.c: pmallocd's answer to such a command ("ok: ..." on stdout,
 * anything else on stderr), freed; the exit status. */
int ctl_put_answer(char *text);
/* ctl_learned.c: field name of the learned-site entry j is at, as a
 * malloc'ed string ("" when absent; NULL without memory), or as a number. */
struct sd_journal;
char *ctl_learned_field(struct sd_journal *j, const char *name);
uint64_t ctl_learned_u64(struct sd_journal *j, const char *name);
/* ctl_learned.c: the fields names[0..n) of that entry in one walk, into
 * vals (malloc'ed, "" when absent); 0, or a negative errno (vals all NULL).
 * The value as a number: 0 unless all decimal digits. */
int ctl_learned_fields(struct sd_journal *j, const char *const *names, size_t n, char **vals);
uint64_t ctl_learned_num(const char *v);

/* ctl_root.c: files beneath a system root (see there).  The root's
 * directory ("" for /) as an O_PATH descriptor: 0 and *ret_fd, or -errno. */
int ctl_root_open(const char *dir, int *ret_fd);
/* openat2(root_fd, path, flags, mode) with RESOLVE_IN_ROOT: path (leading
 * slashes ignored; "" is the root) never resolves outside the root.  0 and
 * *ret_fd, or -errno (-ENOSYS: the kernel has no openat2). */
int ctl_root_openat(int root_fd, const char *path, int flags, mode_t mode, int *ret_fd);
/* mkdir -p of path beneath the root: 0 and *ret_fd (O_PATH, the last
 * directory), or -errno. */
int ctl_root_mkdirs(int root_fd, const char *path, int *ret_fd);
/* A file beneath the root for reading: 0 and *ret, or -errno. */
int ctl_root_fopen(int root_fd, const char *path, FILE **ret);

/* ctl_unit_env.c: what a unit's files (beneath a root) set in its
 * processes' environment, merged as systemd does. */
struct ctl_unit_env {
	char *fragment;              /* the unit file; NULL when none was found */
	char **vars;                 /* Environment=: "NAME=VALUE", in order */
	size_t n_vars;
	char *preload;               /* LD_PRELOAD's value in the end; NULL: unset */
	char *preload_from;          /* the file that set it */
	char *preload_before;        /* its value before the drop-in "ours" */
	char *preload_before_from;
	char *after;                 /* a file read after "ours" that sets LD_PRELOAD */
	char *blocker;               /* "FILE: why" when LD_PRELOAD is set or unset
				      * past any Environment= (EnvironmentFile=,
				      * UnsetEnvironment=) */
	char *user;                  /* User=; NULL: root */
	_Bool seen_ours, in_ours;    /* while reading */
};
/* Read UNIT's files beneath root_fd; ours is the path of our drop-in (or
 * NULL).  0 and *ret (ctl_unit_env_free() it), or -ENOMEM.  Files that
 * cannot be read add nothing. */
int ctl_unit_env_read(int root_fd, const char *unit, const char *ours, struct ctl_unit_env *ret);
void ctl_unit_env_free(struct ctl_unit_env *env);
/* ctl_quote.c: s as a libconfig string literal, quotes included: the one
 * way a value reaches generated policy text (settings and comments). */
void ctl_conf_quote(FILE *f, const char *s);
/* ctl_quote.c: may s be a name in a policy (1 to 255 bytes, no control byte)? */
bool ctl_conf_name_ok(const char *s);
/* ctl_quote.c: s as a policy or pool name (1 to 63 of A-Z a-z 0-9 _ . -)
 * in out: other bytes as '_', cut at 63; true when that is s itself. */
bool ctl_conf_ident(const char *s, char *out, size_t len);
/* ctl_conf_merge.c: policy (the text of one "{ ... }" element of the
 * policies list) into the policy file path for exe: a new file, or that
 * executable's policy replaced in an existing one (path.bak keeps the old
 * bytes).  Says what it did on stderr, as command cmd; 0 or -errno. */
int ctl_conf_put_policy(const char *path, const char *exe, const char *policy, const char *cmd);
/* ctl_writer.c: the function of exe that wrote, from a violation entry's
 * PMALLOC_BACKTRACE and PMALLOC_FAULT_SYMBOL ("" when absent): its first
 * frame in exe, with the store's own function when another's
 * ("cache_set+0x34 (the store in __vsnprintf_internal+0x8f)"); else the
 * fault symbol; into out (cut to len). */
void ctl_audit_writer(const char *backtrace, const char *exe, const char *fault_symbol, char *out, size_t len);
/* ctl_writer.c: is every frame of exe in backtrace of build build_id (hex;
 * the "[BUILD-ID]" the frame carries)?  True when none is of exe. */
bool ctl_audit_exe_build(const char *backtrace, const char *exe, const char *build_id);
/* ctl_buildid.c: the GNU build-id of the ELF file path as lower-case hex
 * ("" when it has none); 0, -ENOEXEC when not an ELF file, -errno. */
int ctl_file_build_id(const char *path, char *hex, size_t hexlen);

#endif
