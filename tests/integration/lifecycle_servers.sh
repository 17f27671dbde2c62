#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# lifecycle_servers.sh - a service's ordinary day under its proposal: for
# Debian's nginx (master and 2 workers as nobody), redis, lighttpd,
# memcached (-t 4) and haproxy in Debian's unit shape (-Ws master-worker,
# chroot, user haproxy, a stats page and an admin socket, stopped by
# SIGTERM to the master), each on loopback with a private configuration,
# served by a pmallocd of ours:
#   - learn: the generic learn policy (pmallocctl learn --exe) under a small
#     load, with the day's events that apply exercised while learning by
#     pmallocctl exercise (a reload through the unit's ExecReload, a worker
#     killed by SIGKILL and respawned, a clean stop as the unit stops it;
#     a stand-in answers for systemctl: this machine has no booted
#     systemd) and the logs reopened as logrotate does;
#   - propose --mode enforce onto the same file;
#   - enforce: a load other than the learned one (other URLs, keys, sizes,
#     16 clients at once) over the same features, two reloads, a worker
#     killed twice, log reopening, a clean stop.  Zero kills, every request
#     answered, the main process alive after each step, and the bytes its
#     pools protect after each reload at least 90% of before.
#   - the attack: with liblearn_inject.so preloaded, a write into a value
#     of the configuration as the server keeps it kills, and the journal
#     names the policy, the pool, a site of the proposal and the role.
# Learning flushes every second (PMALLOC_LEARN_INTERVAL=1): the short learn
# run stands for a long one.  Floors per server: the main process's
# protected bytes and the live bytes of the server's own object.
# An event that does not apply to a server is said ("-" in its figures).
# The figures of each server go to stdout ("figures:" lines).
# LIFECYCLE_SERVERS="nginx redis lighttpd memcached haproxy" names the
# servers to run (by default nginx and lighttpd).
. "${PMALLOC_SRC:?run through make check}/tests/integration/lib.sh"
. "$SRC/tests/integration/daemon_lib.sh"
. "$SRC/tests/integration/servers_lib.sh"

[ "$(id -u)" = 0 ] || skip "needs root (workers switch to an unprivileged user)"
journald_ensure
unset PMALLOC_DEBUG
export PMALLOC_SOCKET=$SOCK
chmod a+rx "$T"

# The systemctl stand-in (lib.sh) that pmallocctl exercise talks to, for
# the unit of the server under test (unit names it): the server's reload
# signal, as Debian's units send it (none for a server without), its stop
# signal, then up to a minute for the process to go.
systemctl_stand_in "$T/unit"

MAIN=
# (Its children first: apache2's outlive a parent killed so.)
stop_main() { [ -z "$MAIN" ] || { pkill -KILL -P "$MAIN"; kill -KILL "$MAIN" 2>/dev/null; wait "$MAIN" 2>/dev/null; MAIN=; }; }
at_exit stop_main

kills() { # EXE SINCE
	journal_sync
	journalctl --no-pager -o json --since "$2" MESSAGE_ID=$MID_VIOLATION PMALLOC_EXE="$1" PMALLOC_POLICY="$POLICY" |
		grep -c . || true
}
violations() { journalctl --no-pager --since "$2" MESSAGE_ID=$MID_VIOLATION PMALLOC_EXE="$1" | tail -n 5; }

# The bytes the main process's pools protect, as pmallocctl status says.
protected_bytes() {
	"$ctl" status --socket "$SOCK" --json 2>/dev/null | python3 -c '
import json, sys
pid = int(sys.argv[1]); d = json.load(sys.stdin)
print(sum(p.get("protected_bytes", 0) for pr in d.get("served") or [] if pr.get("pid") == pid
          for p in pr.get("pools", [])))' "$MAIN"
}

# The main process's children (workers), oldest first.
workers() { pgrep -P "$MAIN" 2>/dev/null | sort -n; }
youngest() { ps -o pid= --ppid "$MAIN" --sort=start_time 2>/dev/null | tail -n 1 | tr -d ' '; }

# unit NAME: the stand-in's unit is the server's now ($MAIN; NAME_unit is
# "RELOAD-SIGNAL STOP-SIGNAL", "-" for no reload).
unit() {
	local -n u=${1}_unit
	local r=${u% *}
	[ "$r" = - ] && r=
	stand_in_follow "$MAIN" "$r" "${u#* }" 60
}
# send EVENT [WORKER]: the event itself.  Learning: through pmallocctl
# exercise, as the README has an administrator do it (it checks that the
# service answers after each; VICTIM: the worker it killed).  Enforce: the
# signal, as systemd and the kernel bring it (the unit's reload and stop
# signals; SIGKILL to WORKER).
send() {
	local -n u=${name}_unit
	if [ "$PHASE" = learn ]; then
		"$ctl" exercise --"$1" "$name" >"$T/exercise" 2>&1 || { cat "$T/exercise" >&2; return 1; }
		VICTIM=$(sed -n 's/^respawn: worker PID \([0-9]*\) .*/\1/p' "$T/exercise")
		return 0
	fi
	case $1 in
	reload) kill -"${u% *}" "$MAIN" ;;
	respawn) VICTIM=$2; kill -KILL "$2" ;;
	stop) kill -"${u#* }" "$MAIN" ;;
	esac
}
# Wait until the main process has N children again, none of them OLD.
respawned() { # N OLD
	local w
	w=$(workers)
	[ "$(printf '%s\n' "$w" | grep -c .)" -ge "$1" ] && ! printf '%s\n' "$w" | grep -qx "$2"
}
alive() { kill -0 "$MAIN" 2>/dev/null; }

curl_load() { # N PARALLEL URL-PREFIX: N requests, each answered
	local n=$1 par=$2 urls=() i
	# (curl's -o names the output of one URL: one per URL.)
	for i in $(seq "$n"); do urls+=(-o /dev/null "$3$i"); done
	timeout "${LOAD_TIMEOUT:-60}" curl -s --no-progress-meter -m 5 ${par:+--parallel --parallel-max "$par"} \
		-H 'Connection: close' -w '%{http_code}\n' "${urls[@]}" >"$T/load" || return 1
	[ "$(grep -c '^[234][0-9][0-9]$' "$T/load")" = "$n" ]
}

# step NAME WHAT: run the server's WHAT hook (if it has one) and check the
# main process lives and answers.  FIG gets "+" or "-" per event.
step() {
	local name=$1 what=$2
	if ! declare -F "${name}_$what" >/dev/null; then
		FIG+=" $what:-"
		return 0
	fi
	"${name}_$what" || fail "$name: $what failed ($PHASE): $(violations "$EXE" "$SINCE")"
	alive || fail "$name: the main process died at $what ($PHASE): $(violations "$EXE" "$SINCE")"
	"${name}_load2" || fail "$name: requests unanswered after $what ($PHASE): $(sort "$T/load" | uniq -c | tr '\n' ' ') $(violations "$EXE" "$SINCE")"
	FIG+=" $what:+"
	said "$what"
}
# said WHAT: the step's time in the log (a failure's log shows how far the day went).
said() { echo "$name ($PHASE): $1 done at ${SECONDS} s" >&2; }

# The proposal's figures: the live bytes of the server's own object
# (OBJECT) in its sites, the bytes proposed per role, the coverage.
proposal_figures() { # FILE OBJECT
	python3 - "$1" "$2" <<'EOP'
import re, sys
text = open(sys.argv[1]).read()
own = sum(int(m.group(1)) for m in re.finditer(
    r'^ *#   site "' + re.escape(sys.argv[2]) + r'[:@][^"]*": ([0-9]+) bytes live', text, re.M))
roles, prot = {}, None
for line in text.splitlines():   # a pool: its comment's bytes, then its roles
    m = re.match(r'^        # protected: ([0-9]+) bytes live', line)
    if m:
        prot, rl = int(m.group(1)), ["every role"]
    m = re.match(r'^        roles = \[(.*)\];', line)
    if m and prot is not None:
        rl = re.findall(r'"([^"]+)"', m.group(1))
    if re.match(r'^        take = ', line) and prot is not None:
        for r in rl:
            roles[r] = roles.get(r, 0) + prot
        prot = None
cov = re.search(r'^    # protected: .*coverage ([0-9.]+%)', text, re.M)
print("%d bytes of %s protected; per role: %s; coverage %s" % (own, sys.argv[2],
      ", ".join("%s %d B" % kv for kv in sorted(roles.items())) or "none", cov.group(1) if cov else "?"))
EOP
}

# inject NAME: the attack, after the day: with liblearn_inject.so preloaded,
# a write (after 20 epoll_wait calls) into NAME_needle, a value of the
# server's configuration as the server keeps it, found in protected memory,
# kills, and the journal names the policy, the pool, a site of the proposal
# and the role of the process killed.  HIT says what happened.
inject() {
	local name=$1 needle v site n role try
	local -n nd=${name}_needle
	# A kill whose entry journald did not take (a journal flooded by other
	# tests' learn flushes drops datagrams: the server's stderr says the
	# kill) is tried again, twice; the entry is required.
	for try in 1 2 3; do
	for n in "$T/inject" "$T"/*/out "$T"/*.out "$T"/*/logs/error.log; do [ ! -e "$n" ] || : >"$n"; done
	SINCE=@$(date +%s.%6N)
	local -n late=${name}_inject_after_s
	PRELOAD="$INJECT $SHIM" LEARN_INJECT_AFTER=20 LEARN_INJECT_AFTER_S=${late:-} LEARN_INJECT_NEEDLE=$(reverse "$nd") \
		"${name}_start" 2>>"$T/inject"
	killed() { [ "$(kills "$EXE" "$SINCE")" != 0 ]; }
	not_found() { grep -q 'not found in protected memory' "$T/inject" "$T"/*/out "$T"/*.out "$T"/*/logs/error.log 2>/dev/null; }
	# (A load refused while the server starts, or cut short by the kill, is
	# tried again, for up to a minute of wall time past the injection's own
	# delay: a server under the shim starts in seconds on 2 busy cores, a
	# count of tries is no bound.)
	local end=$((SECONDS + 60 + ${late:-0}))
	while [ $SECONDS -lt $end ]; do
		killed && break
		not_found && break
		LOAD_TIMEOUT=3 "${name}_load" >/dev/null 2>&1 || sleep 0.2
		[ -z "${late:-}" ] || sleep 0.5
	done
	wait_until 50 killed || true
	stop_main
	# A server whose kept configuration learning cannot protect says why
	# (NAME_unprotected), and the attack is then said, not required.
	local -n why=${name}_unprotected
	if [ -n "${why:-}" ] && not_found; then
		HIT="the attack found \"$nd\" in no protected memory: $why"
		return 0
	fi
	journal_sync
	v=$(journalctl --no-pager -o json --since "$SINCE" MESSAGE_ID=$MID_VIOLATION PMALLOC_EXE="$EXE" PMALLOC_POLICY="$POLICY" | head -n 1)
	[ -n "$v" ] && break
	grep -qh 'enforce: killed by SIGSEGV' "$T/inject" "$T"/*/out "$T"/*.out 2>/dev/null || break
	echo "$name: a kill by the injected write without its journal entry (journald busy), try $try" >&2
	done
	[ -n "$v" ] || fail "$name: the injected write into \"$nd\" killed nothing: $(grep -h learn_inject "$T/inject" "$T"/*/out "$T"/*.out 2>/dev/null | head -n 3)"
	printf '%s' "$v" | grep -q '"PMALLOC_SIGNAL_NAME":"SIGSEGV"' || fail "$name: the injected write was not killed: $v"
	printf '%s' "$v" | grep -q '"PMALLOC_POOL":"learned' || fail "$name: the violation names no pool of the proposal: $v"
	role=$(printf '%s' "$v" | sed -n 's/.*"PMALLOC_ROLE":"\([^"]*\)".*/\1/p')
	[ -n "$role" ] || fail "$name: the violation names no role: $v"
	# The site: "MODULE+0xOFF", or "FUNCTION+0xOFF (MODULE+0xOFF)" where
	# pmallocd names the function (haproxy exports its own); the proposal
	# names it by function or by call.
	site=$(printf '%s' "$v" | sed -n 's/.*"PMALLOC_OBJECT_SITE":"\([^"]*+0x[0-9a-f]*\)\( ([^"]*+0x[0-9a-f]*)\)\{0,1\}".*/\1\2/p')
	[ -n "$site" ] || fail "$name: the violation names no site: $v"
	local call=${site#* (}
	[ "$call" != "$site" ] || call=
	proposed "${site%% (*}" "$T/$name.conf" || { [ -n "$call" ] && proposed "${call%)}" "$T/$name.conf"; } ||
		fail "$name: site $site is not in the proposal"
	HIT="a write into \"$nd\" killed (role $role, site $site)"
}

# day NAME EXE MAIN-FLOOR OWN-FLOOR: learn with the events, propose, enforce through the day.
day() {
	local name=$1 before after n own
	EXE=$2
	rm -f "$CONF" "$CONF.bak"
	"$ctl" learn --exe "$EXE" --output "$CONF" 2>"$T/err" || fail "$name: learn: $(cat "$T/err")"
	POLICY=$name-$$
	sed -i "s/^    name = \"[^\"]*\";\$/    name = \"$POLICY\";/" "$CONF"
	[ -z "$DPID" ] || stop_daemon || true
	start_daemon

	PHASE=learn FIG=
	export PMALLOC_LEARN_INTERVAL=1
	SINCE=@$(date +%s.%6N)
	"${name}_start"
	unit "$name"
	said start
	"${name}_load" || fail "$name: the learn load failed: $(sort "$T/load" | uniq -c | tr '\n' ' ')$(alive || echo "; the main process died")"
	for e in reload respawn reopen; do step "$name" $e; done
	"${name}_stop" || fail "$name: the clean stop failed in learn mode"
	said stop
	[ "$(kills "$EXE" "$SINCE")" = 0 ] || fail "$name: learn mode killed: $(violations "$EXE" "$SINCE")"

	local mode=() runs=() r
	"$ctl" propose --help 2>&1 | grep -q -- '--mode' && mode=(--mode enforce)
	# (--since: only this day's entries are read, not every earlier run's
	# in the shared journal; --run: only this day's runs, those of its
	# policy, not another learn run of the same executable that a test of
	# another tree on this machine started since, which would be "the
	# latest load" propose takes by default.)
	journal_sync
	for r in $(journalctl --no-pager -o cat --output-fields=PMALLOC_RUN --since "$SINCE" MESSAGE_ID=$MID_LEARNED \
		PMALLOC_POLICY="$POLICY" | sort -u); do
		runs+=(--run "$r")
	done
	"$ctl" propose --exe "$EXE" "${mode[@]}" --since "$SINCE" "${runs[@]}" ${RUN_AS:+--uid "$RUN_AS"} --output "$CONF" 2>"$T/err" ||
		fail "$name: propose: $(cat "$T/err")"
	grep -q 'mode = "enforce"' "$CONF" || fail "$name: not an enforce policy: $(cat "$CONF")"
	cp "$CONF" "$T/$name.conf"
	[ -z "${KEEP:-}" ] || cp "$CONF" "$KEEP/$name.conf"
	stop_daemon || true
	start_daemon

	PHASE=enforce FIG=
	unset PMALLOC_LEARN_INTERVAL
	SINCE=@$(date +%s.%6N)
	"${name}_start"
	unit "$name"
	said start
	"${name}_load2" || fail "$name: the other load failed in enforce mode: $(violations "$EXE" "$SINCE")"
	before=$(protected_bytes)
	[ "${before:-0}" -gt 0 ] || fail "$name: nothing protected in the main process under enforce"
	for n in 1 2; do
		step "$name" reload
		if declare -F "${name}_reload" >/dev/null; then
			after=$(protected_bytes)
			[ "$((after * 10))" -ge "$((before * 9))" ] ||
				fail "$name: reload $n: $after bytes protected, $before before (under 90%)"
			FIG+="($after/$before B)"
			echo "$name (enforce): reload $n: $after bytes protected in the main process, $before before" >&2
		fi
	done
	for n in 1 2; do step "$name" respawn; done
	step "$name" reopen
	"${name}_stop" || fail "$name: the clean stop failed in enforce mode: $(violations "$EXE" "$SINCE")"
	said stop
	[ "$(kills "$EXE" "$SINCE")" = 0 ] || fail "$name: the proposal killed: $(violations "$EXE" "$SINCE")"
	inject "$name"
	printf 'figures: %s: %s; %s bytes protected in the main process at start; events:%s; %s\n' "$name" \
		"$(proposal_figures "$T/$name.conf" "${EXE##*/}")" "$before" "$FIG" "$HIT"
	# A day lived by protecting nothing proves nothing: the floors per server,
	# of the main process's protected bytes and of the live bytes of the
	# server's own object in the proposal's sites.
	[ "$before" -ge "$3" ] || fail "$name: $before bytes protected in the main process, expected $3 or more"
	own=$(grep "^ *#   site \"${EXE##*/}[:@]" "$T/$name.conf" | sed 's/.*": \([0-9]*\) bytes live.*/\1/' |
		awk '{ t += $1 } END { print t + 0 }')
	[ "$own" -ge "$4" ] || fail "$name: $own bytes of ${EXE##*/} protected, expected $4 or more"
	pass "$name: learned through its day, then enforce through reloads, respawns, reopen and a stop without a kill; $HIT"
}

# ---- the servers: NAME_start NAME_load NAME_load2 NAME_stop, and where
# they apply NAME_reload NAME_respawn NAME_reopen.  MAIN: the main pid.

# make check runs the servers that live their whole day without a false
# kill every time: nginx and lighttpd here, redis, memcached and haproxy
# through lifecycle_redis.sh, lifecycle_memcached.sh and
# lifecycle_haproxy.sh (a script each, for run-tests' 300 s a script:
# haproxy's day, its re-exec at each reload included, takes 20 to 100 s
# on 2 busy cores); make check-lifecycle runs the five in one script, make
# soak apache2 and unbound.
# Events that do not apply: redis has no reload (SIGHUP ends it; Debian's
# unit has no ExecReload, and CONFIG REWRITE writes the file, it reads
# nothing back) and no workers; memcached has no reload (SIGHUP ignored,
# no ExecReload), no workers (threads) and no log file (its unit's stdout
# goes to the journal).
want() { case " ${LIFECYCLE_SERVERS:-nginx lighttpd} " in *" $1 "*) return 0 ;; esac; return 1; }
# port_of K: a loopback port of 24000-24899 that nothing listens on, the
# first from the one this pid and K name (a helper's server or another
# test's left on the port made the server fail to come up).
port_of() {
	local k p
	for k in $(seq 0 899); do
		p=$((24000 + ($$ + $1 + k) % 900))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
	echo $((24000 + ($$ + $1) % 900))
}

if want nginx && [ -x /usr/sbin/nginx ]; then
	nport=$(port_of 0)
	mkdir -p "$T/ngx/logs" "$T/ngx/html"
	echo hello >"$T/ngx/html/index.html"
	for i in $(seq 20); do echo "page $i" >"$T/ngx/html/p$i.html"; done
	chmod -R a+rX "$T/ngx"
	cat >"$T/ngx/nginx.conf" <<EOC
user nobody nogroup;
worker_processes 2;
daemon off;
pid $T/ngx/nginx.pid;
error_log $T/ngx/logs/error.log;
events { worker_connections 64; }
http {
  access_log $T/ngx/logs/access.log;
  client_body_temp_path $T/ngx/body; proxy_temp_path $T/ngx/proxy;
  fastcgi_temp_path $T/ngx/fcgi; uwsgi_temp_path $T/ngx/uwsgi; scgi_temp_path $T/ngx/scgi;
  server { listen 127.0.0.1:$nport; server_name Kept-Config-$$.Example; root $T/ngx/html; location / { } location /gone { return 410; } }
}
EOC
	nginx_start() {
		LD_PRELOAD=${PRELOAD:-$SHIM} /usr/sbin/nginx -p "$T/ngx" -c "$T/ngx/nginx.conf" -e "$T/ngx/logs/error.log" >"$T/ngx/out" 2>&1 &
		MAIN=$!
		[ -z "${PRELOAD:-}" ] || return 0
		wait_until 200 curl -sf -o /dev/null "http://127.0.0.1:$nport/" ||
			fail "nginx did not come up: $(cat "$T/ngx/out" "$T/ngx/logs/error.log")"
		wait_until 100 respawned 2 0 || fail "nginx: no 2 workers"
	}
	nginx_load() { curl_load 40 "" "http://127.0.0.1:$nport/?n="; }
	nginx_load2() { curl_load 60 16 "http://127.0.0.1:$nport/p1.html?k=" && curl_load 20 16 "http://127.0.0.1:$nport/gone/"; }
	nginx_unit="HUP QUIT"   # Debian's nginx.service: ExecReload -s reload (SIGHUP), stop by QUIT
	nginx_reload() { # new workers, the old ones leave
		local old
		old=$(workers | head -n 1)
		send reload && wait_until 200 respawned 2 "$old"
	}
	nginx_respawn() { send respawn "$(youngest)" && wait_until 200 respawned 2 "$VICTIM"; }
	# logrotate's way: the log moved away, SIGUSR1, nginx opens it anew.
	nginx_reopen() {
		mv "$T/ngx/logs/access.log" "$T/ngx/logs/access.log.1" && kill -USR1 "$MAIN" &&
			wait_until 200 test -e "$T/ngx/logs/access.log"
	}
	nginx_stop() { send stop; wait "$MAIN"; local rc=$?; MAIN=; [ $rc = 0 ]; }
	nginx_needle=kept-config-$$.example
	day nginx "$(readlink -f /usr/sbin/nginx)" 131072 65536
elif want nginx; then
	echo "skipped: nginx not installed"
fi

if want redis && command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
	rport=$(port_of 150)
	mkdir -p "$T/rds"
	# A file, as Debian's unit gives it: what the server keeps of it is not
	# in its argv (which redis copies for its process title).
	cat >"$T/rds/redis.conf" <<EOC
port $rport
bind 127.0.0.1
save ""
appendonly no
dir $T/rds
daemonize no
logfile $T/rds/kept-config-$$.log
EOC
	redis_start() {
		LD_PRELOAD=${PRELOAD:-$SHIM} redis-server "$T/rds/redis.conf" &
		MAIN=$!
		[ -z "${PRELOAD:-}" ] || return 0
		wait_until 200 redis-cli -p "$rport" ping || fail "redis did not come up: $(cat "$T/rds/kept-config-$$.log")"
	}
	redis_load() { timeout "${LOAD_TIMEOUT:-60}" redis-benchmark -p "$rport" -n 1000 -c 4 -q -t set,get,lpush,incr >/dev/null; }
	redis_load2() {
		timeout "${LOAD_TIMEOUT:-60}" redis-benchmark -p "$rport" -n 1000 -c 16 -r 100000 -d 200 -q -t set,get,lpush,lpop,incr >/dev/null &&
		[ "$(redis-cli -p "$rport" set life-key "$RANDOM")" = OK ]
	}
	# Log reopening: redis opens its log file by name for each line (Debian's
	# logrotate sends it nothing).  The log moved away, a BGSAVE (a child
	# forked after the trigger, as each save is) logs into a new file,
	# and its child's success is said there.  The dump is removed: a redis
	# that loads a dataset at start builds its keyspace before the trigger,
	# which a learn run started empty never saw (a known false kill: the
	# first key added kills, in dictAddRaw).
	redis_reopen() {
		mv "$T/rds/kept-config-$$.log" "$T/rds/old.log"
		[ "$(redis-cli -p "$rport" bgsave)" = "Background saving started" ] &&
			wait_until 200 grep -q 'Background saving terminated with success' "$T/rds/kept-config-$$.log" &&
			rm -f "$T/rds/dump.rdb"
	}
	redis_unit="- TERM"
	redis_stop() { send stop; wait "$MAIN"; local rc=$?; MAIN=; [ $rc = 0 ]; }
	redis_needle=kept-config-$$.log
	day redis "$(readlink -f "$(command -v redis-server)")" 262144 131072
elif want redis; then
	echo "skipped: redis-server not installed"
fi

if want lighttpd && [ -x /usr/sbin/lighttpd ]; then
	lport=$(port_of 300)
	mkdir -p "$T/lt/www"
	for i in $(seq 20); do echo "page $i" >"$T/lt/www/p$i.html"; done
	echo hello >"$T/lt/www/index.html"
	chmod -R a+rX "$T/lt"
	cat >"$T/lt/lighttpd.conf" <<EOC
server.modules = ( "mod_indexfile", "mod_access", "mod_staticfile", "mod_accesslog" )
server.document-root = "$T/lt/www"
server.errorlog = "$T/lt/error.log"
accesslog.filename = "$T/lt/access.log"
server.pid-file = "$T/lt/lighttpd.pid"
server.port = $lport
server.bind = "127.0.0.1"
server.tag = "Kept-Config-$$"
index-file.names = ( "index.html" )
include_shell "perl /usr/share/lighttpd/create-mime.conf.pl"
server.feature-flags += ("server.graceful-shutdown-timeout" => 5)
EOC
	lighttpd_start() {
		LD_PRELOAD=${PRELOAD:-$SHIM} /usr/sbin/lighttpd -D -f "$T/lt/lighttpd.conf" >"$T/lt/out" 2>&1 &
		MAIN=$!
		[ -z "${PRELOAD:-}" ] || return 0
		wait_until 200 curl -sf -o /dev/null "http://127.0.0.1:$lport/" ||
			fail "lighttpd did not come up: $(cat "$T/lt/out" "$T/lt/error.log" 2>/dev/null)"
	}
	lighttpd_load() { curl_load 40 "" "http://127.0.0.1:$lport/?n="; }
	lighttpd_load2() { curl_load 60 16 "http://127.0.0.1:$lport/p2.html?k=" && curl_load 20 16 "http://127.0.0.1:$lport/none-"; }
	lighttpd_unit="USR1 TERM"   # Debian's lighttpd.service: ExecReload kill -USR1 (graceful restart, in the same process)
	lighttpd_reload() { send reload && wait_until 200 curl -sf -o /dev/null "http://127.0.0.1:$lport/index.html"; }
	# Debian's logrotate: the log moved away, SIGHUP reopens it.
	lighttpd_reopen() {
		mv "$T/lt/access.log" "$T/lt/access.log.1" && kill -HUP "$MAIN" && wait_until 200 test -e "$T/lt/access.log"
	}
	lighttpd_stop() { send stop; wait "$MAIN"; local rc=$?; MAIN=; [ $rc = 0 ]; }
	lighttpd_needle=Kept-Config-$$
	day lighttpd /usr/sbin/lighttpd 65536 65536
elif want lighttpd; then
	echo "skipped: lighttpd not installed"
fi

if want memcached && [ -x /usr/bin/memcached ]; then
	mport=$(port_of 450)
	memcached_start() {
		LD_PRELOAD=${PRELOAD:-$SHIM} /usr/bin/memcached -u nobody -l 127.0.0.1 -p "$mport" -U 0 -t 4 -m 64 >"$T/mc.out" 2>&1 &
		MAIN=$!
		[ -z "${PRELOAD:-}" ] || return 0
		wait_until 200 mc_cmd 'version' || fail "memcached did not come up: $(cat "$T/mc.out")"
	}
	mc_cmd() { # CMD...: one connection, the lines given, the answer's first line not ERROR
		local out
		out=$(exec 3<>"/dev/tcp/127.0.0.1/$mport" && printf '%s\r\n' "$@" quit >&3 && timeout 5 cat <&3) || return 1
		[ -n "$out" ] && ! printf '%s' "$out" | grep -q '^ERROR\|^SERVER_ERROR'
	}
	# Learning lasts 3 s at least: memcached's LRU maintainer and slab
	# automover write what they built at start once a second (its clock),
	# and a shorter run would learn that memory as never written.
	memcached_load() {
		local i
		for i in $(seq 30); do mc_cmd "set k$i 0 0 3" abc "get k$i" || return 1; done
		[ "$PHASE" != learn ] || sleep 3
	}
	memcached_load2() {
		local i pids=() ok=0
		for i in $(seq 16); do
			( for j in $(seq 10); do v=$(printf "%0$((i * 40))d" "$j")
				mc_cmd "set c$i-$j 0 0 ${#v}" "$v" "get c$i-$j" "incr n$i 1" "delete c$i-$j" || exit 1; done ) &
			pids+=($!)
		done
		for p in "${pids[@]}"; do wait "$p" || ok=1; done
		return $ok
	}
	memcached_unit="- TERM"
	memcached_stop() { send stop; wait "$MAIN"; local rc=$?; MAIN=; [ $rc = 0 ] || [ $rc = 143 ]; }
	memcached_needle=127.0.0.1   # -l: memcached keeps it (settings.inter, strdup)
	RUN_AS=nobody day memcached /usr/bin/memcached 524288 4096
elif want memcached; then
	echo "skipped: memcached not installed"
fi

if want haproxy && [ -x /usr/sbin/haproxy ] && id haproxy >/dev/null 2>&1; then
	hport=$(port_of 600) sport=$(port_of 750)
	mkdir -p "$T/hap/chroot" "$T/hap/run"
	cat >"$T/hap/haproxy.cfg" <<EOC
global
	chroot $T/hap/chroot
	stats socket $T/hap/run/admin.sock mode 660 level admin
	stats timeout 30s
	user haproxy
	group haproxy
defaults
	mode http
	timeout connect 5s
	timeout client 10s
	timeout server 10s
frontend web
	bind 127.0.0.1:$hport
	http-request return status 200 content-type text/plain string "hello from haproxy" if { path_beg /p }
	http-request return status 404 content-type text/plain string "nothing here"
listen stats
	bind 127.0.0.1:$sport
	stats enable
	stats uri /stats
EOC
	# Its reload is SIGUSR2 to the master, which re-execs itself: the
	# shim's reload window lets the old image's writes through until the
	# exec (reload.c); the new image starts as the first did, role main.
	# Learning flushes before the exec (execvp is wrapped), and its
	# workers (RLIMIT_NPROC 0: no flush thread) flush at their wait calls.
	# Debian's haproxy.service: ExecStart=haproxy -Ws -f CONFIG -p PIDFILE -S
	# master.sock; ExecReload: a check, then SIGUSR2 to the master; stop:
	# SIGTERM to the master (KillMode=mixed).
	# The master is settled when it runs as the wait-mode master (it
	# re-execs itself so after forking its workers, at start and at each
	# reload) and sleeps in its event loop: a SIGUSR2 that comes earlier
	# is queued by the image about to exec, and lost (haproxy's own race,
	# seconds wide in learn mode, whose exec flush names and sends every
	# context first).  Learn mode starts haproxy in 15 s or more on 2
	# busy cores: the bounds below are a minute.
	hap_settled() {
		tr '\0' '\n' <"/proc/$MAIN/environ" 2>/dev/null | grep -qx 'HAPROXY_MWORKER_WAIT_ONLY=1' &&
			[ "$(cat "/proc/$MAIN/wchan" 2>/dev/null)" = do_epoll_wait ]
	}
	haproxy_start() {
		LD_PRELOAD=${PRELOAD:-$SHIM} /usr/sbin/haproxy -Ws -f "$T/hap/haproxy.cfg" -p "$T/hap/run/haproxy.pid" \
			-S "$T/hap/run/master.sock" >"$T/hap/out" 2>&1 &
		MAIN=$!
		[ -z "${PRELOAD:-}" ] || return 0
		wait_until 1200 curl -sf -o /dev/null "http://127.0.0.1:$hport/p" ||
			fail "haproxy did not come up: $(cat "$T/hap/out")"
		wait_until 1200 hap_settled || fail "haproxy's master did not settle in wait mode: $(cat "$T/hap/out")"
	}
	haproxy_load() { curl_load 40 "" "http://127.0.0.1:$hport/p?n="; }
	haproxy_load2() { curl_load 60 16 "http://127.0.0.1:$hport/page-" && curl_load 20 16 "http://127.0.0.1:$hport/none-"; }
	haproxy_reload() {
		local old
		old=$(workers | head -n 1)
		/usr/sbin/haproxy -Ws -f "$T/hap/haproxy.cfg" -c -q && send reload &&
			wait_until 1200 respawned 1 "$old" && wait_until 1200 hap_settled
	}
	haproxy_unit="USR2 TERM"   # Debian's haproxy.service: ExecReload kill -USR2, stop by SIGTERM (KillMode=mixed)
	haproxy_stop() { send stop; wait "$MAIN"; local rc=$?; MAIN=; [ $rc = 0 ] || [ $rc = 143 ]; }
	# What haproxy keeps of its configuration in protected memory: the
	# configuration file's name (its list of files, and HAPROXY_CFGFILES),
	# in the master and the worker.  Its values proper (the "return"
	# string, "hello from haproxy") are in memory its learn run saw
	# written or allocating while serving: not protected.
	haproxy_needle=$T/hap/haproxy.cfg
	RUN_AS=haproxy day haproxy /usr/sbin/haproxy 524288 524288
elif want haproxy; then
	echo "skipped: haproxy not installed"
fi

# ---- make soak's servers (LIFECYCLE_SERVERS="apache2 unbound"): not in
# make check.  Figures: doc/figures.md.

if want apache2 && [ -x /usr/sbin/apache2 ] && id www-data >/dev/null 2>&1; then
	aport=$(port_of 800)
	mkdir -p "$T/ap/www" "$T/ap/logs"
	for i in $(seq 20); do echo "page $i" >"$T/ap/www/p$i.html"; done
	echo hello >"$T/ap/www/index.html"
	chmod -R a+rX "$T/ap"
	cat >"$T/ap/apache2.conf" <<EOC
ServerRoot "$T/ap"
ServerName Kept-Config-$$.Example
LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
LoadModule dir_module /usr/lib/apache2/modules/mod_dir.so
LoadModule mime_module /usr/lib/apache2/modules/mod_mime.so
User www-data
Group www-data
Listen 127.0.0.1:$aport
PidFile $T/ap/apache2.pid
Mutex file:$T/ap
ErrorLog $T/ap/logs/error.log
LogFormat "%h %l %u %t \"%r\" %>s %b" common
CustomLog $T/ap/logs/access.log common
TypesConfig /etc/mime.types
StartServers 2
ServerLimit 4
ThreadsPerChild 8
MaxRequestWorkers 32
DocumentRoot "$T/ap/www"
<Directory "$T/ap/www">
  Require all granted
</Directory>
DirectoryIndex index.html
EOC
	# Debian's apache2.service: apachectl start (forks); reload: apachectl
	# graceful (SIGUSR1 to the parent: new children, the old ones finish);
	# logrotate reopens the logs by a reload too; stop: apachectl
	# graceful-stop (SIGWINCH).  Here in the foreground, its parent MAIN.
	apache2_start() {
		LD_PRELOAD=${PRELOAD:-$SHIM} /usr/sbin/apache2 -f "$T/ap/apache2.conf" -DFOREGROUND >"$T/ap/out" 2>&1 &
		MAIN=$!
		[ -z "${PRELOAD:-}" ] || return 0
		wait_until 200 curl -sf -o /dev/null "http://127.0.0.1:$aport/" ||
			fail "apache2 did not come up: $(cat "$T/ap/out" "$T/ap/logs/error.log" 2>/dev/null)"
		wait_until 100 respawned 2 0 || fail "apache2: no 2 children"
	}
	apache2_load() { curl_load 40 "" "http://127.0.0.1:$aport/?n="; }
	apache2_load2() { curl_load 60 16 "http://127.0.0.1:$aport/p3.html?k=" && curl_load 20 16 "http://127.0.0.1:$aport/none-"; }
	apache2_reload() {
		local old
		old=$(workers | head -n 1)
		kill -USR1 "$MAIN" && wait_until 200 respawned 2 "$old"
	}
	apache2_respawn() {
		local w
		w=$(workers | head -n 1)
		kill -KILL "$w" && wait_until 200 respawned 2 "$w"
	}
	apache2_reopen() { apache2_reload; }
	apache2_unit="USR1 WINCH"   # apachectl graceful, graceful-stop
	apache2_stop() { kill -WINCH "$MAIN"; wait "$MAIN"; local rc=$?; MAIN=; [ $rc = 0 ]; }
	apache2_needle=Kept-Config-$$.Example   # apache2 keeps its ServerName as written
	# Its children (their stderr: error.log) are protected at their on-wait
	# fallback, 30 s after their fork: the attack comes after that.
	apache2_inject_after_s=35
	# What apache2 keeps of its configuration is in APR pools: blocks the
	# pool allocates from again after the trigger (written, left out), and
	# blocks the allocator recycles (freed): learning protects glibc's
	# start-up state and a few objects of apache2's own (coverage ~23%).
	apache2_unprotected="apache2 keeps its configuration in APR pool blocks, written and recycled after the trigger"
	RUN_AS=www-data day apache2 /usr/sbin/apache2 4096 0
elif want apache2; then
	echo "skipped: apache2 not installed"
fi

if want unbound && [ -x /usr/sbin/unbound ] && command -v dig >/dev/null; then
	uport=$(port_of 850)
	mkdir -p "$T/ub"
	chmod a+rwx "$T/ub"
	{
		cat <<EOC
server:
	interface: 127.0.0.1
	port: $uport
	num-threads: 4
	do-daemonize: no
	chroot: ""
	username: ""
	directory: "$T/ub"
	pidfile: "$T/ub/unbound.pid"
	logfile: "$T/ub/unbound.log"
	use-syslog: no
	do-ip6: no
	access-control: 127.0.0.0/8 allow
	local-zone: "kept-config-$$.example." static
EOC
		for i in $(seq 40); do printf '\tlocal-data: "h%d.kept-config-%d.example. A 10.0.%d.%d"\n' "$i" $$ $((i / 250)) $((i % 250)); done
	} >"$T/ub/unbound.conf"
	# Debian's unbound.service: unbound -d (its main thread and 4 more);
	# reload: SIGHUP (ExecReload), which also reopens the log: the threads
	# are stopped, the configuration read again, new threads started;
	# stop: SIGTERM.  No worker processes.
	unbound_start() {
		LD_PRELOAD=${PRELOAD:-$SHIM} /usr/sbin/unbound -d -c "$T/ub/unbound.conf" >"$T/ub/out" 2>&1 &
		MAIN=$!
		[ -z "${PRELOAD:-}" ] || return 0
		wait_until 200 dig +short +time=1 +tries=1 -p "$uport" @127.0.0.1 "h1.kept-config-$$.example" ||
			fail "unbound did not come up: $(cat "$T/ub/out" "$T/ub/unbound.log" 2>/dev/null)"
	}
	dig_load() { # N PARALLEL FIRST [+tcp]: N queries, PARALLEL at once, each answered
		local n=$1 par=$2 first=$3 tcp=${4:-} i
		for i in $(seq "$first" $((first + n - 1))); do echo "h$((i % 40 + 1)).kept-config-$$.example"; done |
			timeout "${LOAD_TIMEOUT:-60}" xargs -P "$par" -I{} dig +short +time=2 +tries=2 $tcp -p "$uport" @127.0.0.1 {} A >"$T/load" || return 1
		[ "$(grep -c '^10\.' "$T/load")" = "$n" ]
	}
	unbound_load() { dig_load 30 1 0 && dig_load 10 1 0 +tcp; }
	unbound_load2() { dig_load 60 16 7 && dig_load 20 16 11 +tcp; }
	unbound_reload() { kill -HUP "$MAIN" && sleep 0.5 && wait_until 100 dig +short +time=1 +tries=1 -p "$uport" @127.0.0.1 "h2.kept-config-$$.example"; }
	unbound_unit="HUP TERM"
	unbound_stop() { kill -TERM "$MAIN"; wait "$MAIN"; local rc=$?; MAIN=; [ $rc = 0 ]; }
	unbound_needle=kept-config-$$.example
	day unbound /usr/sbin/unbound 4096 4096
elif want unbound; then
	echo "skipped: unbound or dig not installed"
fi
