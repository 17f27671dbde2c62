#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# learn_servers.sh - the generic learn policy, and nothing else, on Debian's
# nginx, redis-server and lighttpd, each on loopback with a private
# configuration, served by a pmallocd of ours:
#   - pmallocctl learn --exe writes the policy (one pool, every site, no
#     wrapper, on-wait); the server learns under a short bounded load (curl,
#     redis-benchmark), then is stopped by SIGTERM: nothing killed;
#   - pmallocctl propose --output onto the same file: a policy check accepts
#     without warning, that protects at least MIN bytes live of the server's
#     own object, and covers 90% or more of what stayed unwritten;
#   - enforce under the load learned and under another one (other URLs or
#     keys, 16 clients at once, a hash and a list grown past their start-up
#     encoding): zero kills;
#   - with liblearn_inject.so preloaded, which writes (after N epoll_wait
#     calls) into a value of the configuration as the server keeps it,
#     found in protected memory: the worker dies by SIGSEGV and the journal
#     names the policy, the pool and a site of the proposal.
# A target not reached (bytes, coverage, a value not protected) is printed
# as "below target: ..." at the end; every other property fails the test.
# The figures of each server go to stdout (the README's table).
. "${PMALLOC_SRC:?run through make check}/tests/integration/lib.sh"
. "$SRC/tests/integration/daemon_lib.sh"
. "$SRC/tests/integration/servers_lib.sh"

journald_ensure
unset PMALLOC_DEBUG
export PMALLOC_SOCKET=$SOCK

MISSED=()
SERVER_PID=
stop_server() {
	[ -n "$SERVER_PID" ] || return 0
	kill "$SERVER_PID" 2>/dev/null
	wait "$SERVER_PID" 2>/dev/null
	SERVER_PID=
}
at_exit stop_server

# The policy file pmallocd serves: written by pmallocctl, read at start.
restart_daemon() {
	[ -z "$DPID" ] || stop_daemon || true
	start_daemon
}

# Violations of this test's policy (named after the program and this
# script's pid: other trees may run the same servers at the same time).
kills() { # EXE SINCE
	journal_sync
	journalctl --no-pager -o json --since "$2" MESSAGE_ID=$MID_VIOLATION PMALLOC_EXE="$1" PMALLOC_POLICY="$POLICY" |
		grep -c . || true
}

# cycle NAME EXE START LOAD LOAD2 NEEDLES MIN
#   START starts the server (sets SERVER_PID), LOAD the load learned from,
#   LOAD2 another one; NEEDLES values of the configuration as the server
#   keeps it (words: tried in turn); MIN the least live bytes of the server's own object the
#   proposal must protect.
cycle() {
	local name=$1 exe=$2 start=$3 load=$4 load2=$5 needles=$6 min=$7 since pids p own cov n v site
	rm -f "$CONF" "$CONF.bak"
	"$ctl" learn --exe "$exe" --output "$CONF" 2>"$T/err" || fail "$name: learn: $(cat "$T/err")"
	grep -q 'wrappers' "$CONF" && fail "$name: the learn policy names wrappers"
	POLICY=$name-$$
	sed -i "s/^    name = \"[^\"]*\";\$/    name = \"$POLICY\";/" "$CONF"
	grep -q "name = \"$POLICY\";" "$CONF" || fail "$name: cannot rename the learn policy: $(cat "$CONF")"
	restart_daemon
	since=@$(date +%s.%6N)
	LD_PRELOAD=$SHIM $start
	for n in 1 2; do $load || fail "$name: load failed in learn mode"; done
	# Stopped as systemctl stop does (SIGTERM): what the server frees while
	# it shuts down is not counted as freed (learn mode notes the signal).
	stop_server
	[ "$(kills "$exe" "$since")" = 0 ] || fail "$name: learn mode killed"

	"$ctl" propose --mode enforce --exe "$exe" --output "$CONF" 2>"$T/err" || fail "$name: propose: $(cat "$T/err")"
	cp "$CONF" "$T/$name.conf"
	[ -z "${KEEP:-}" ] || cp "$CONF" "$KEEP/$name.conf"
	"$ctl" check "$CONF" >"$T/check" 2>&1 || fail "$name: check: $(cat "$T/check")"
	grep -qi warning "$T/check" && fail "$name: check warns: $(cat "$T/check")"
	grep -q 'mode = "enforce"' "$CONF" && grep -q 'take = "until-trigger";' "$CONF" ||
		fail "$name: not an enforce policy taking until its trigger: $(cat "$CONF")"
	# The live bytes protected in the server's own object, and the coverage.
	own=$(grep "^ *#   site \"${exe##*/}[:@]" "$CONF" | sed 's/.*": \([0-9]*\) bytes live.*/\1/' |
		awk '{ t += $1 } END { print t + 0 }')
	cov=$(sed -n 's/^    # protected: .*coverage \([0-9.]*\)%$/\1/p' "$CONF")
	printf 'figures: %s: %s; %s bytes live of %s; %s\n' "$name" \
		"$(sed -n 's/^    # protected: //p' "$CONF")" "$own" "${exe##*/}" "$(sed -n 's/^    # left out: /left out: /p' "$CONF")"
	# The targets are checked last (after the kills), every server's.
	[ "$own" -ge "$min" ] || MISSED+=("$name: $own bytes of ${exe##*/} protected, expected $min or more")
	awk -v c="$cov" 'BEGIN { exit !(c >= 90) }' || MISSED+=("$name: coverage $cov%, expected 90% or more")

	restart_daemon
	since=@$(date +%s.%6N)
	LD_PRELOAD=$SHIM $start
	sleep 0.5
	[ "$(kills "$exe" "$since")" = 0 ] || fail "$name: the proposal killed at start: $(journalctl --no-pager --since "$since" MESSAGE_ID=$MID_VIOLATION | head -n 3)"
	$load || fail "$name: the learned load failed in enforce mode"
	$load2 || fail "$name: the other load failed in enforce mode"
	stop_server
	[ "$(kills "$exe" "$since")" = 0 ] || fail "$name: the proposal killed: $(journalctl --no-pager --since "$since" MESSAGE_ID=$MID_VIOLATION)"

	# The attack: a write into a configuration value the server keeps, the
	# first of NEEDLES found in protected memory; one not found there is a
	# target missed (said below), not a pass.
	local needle hit=
	# What liblearn_inject.so said (a worker's stderr is the server's output).
	inject_said() { cat "$T/inject" "$T"/*/out 2>/dev/null | grep learn_inject; }
	not_found() { inject_said | grep -q 'not found in protected memory'; }
	wrote() { inject_said | grep -q 'learn_inject: writing at'; }
	for needle in $needles; do
		for n in "$T"/*/out; do [ -e "$n" ] && : >"$n"; done
		since=@$(date +%s.%6N)
		# (The write may kill the server before it answers: START does not wait then.)
		INJECTING=1 LEARN_INJECT_AFTER=20 LEARN_INJECT_NEEDLE=$(reverse "$needle") LD_PRELOAD="$INJECT $SHIM" $start 2>"$T/inject"
		# Stopped at the first kill: a master that respawns its worker after its
		# own trigger gives a worker that dies at start, again and again.
		killed() { [ "$(kills "$exe" "$since")" != 0 ]; }
		# START did not wait for the server to answer: a load refused
		# while it starts (a loaded machine) is tried again, 20 times.
		for n in $(seq 20); do
			killed && break
			not_found && break
			wrote && break
			# A load the write cut short waits for answers that never
			# come: bounded by seconds, not by the load's own 30.
			LOAD_TIMEOUT=3 $load >/dev/null 2>&1 || true
		done
		# A write made is a kill to come: its journal entry, which a loaded
		# machine may take seconds to store, waited for up to 20 s.
		if wrote; then wait_until 400 killed || true; else not_found || wait_until 50 killed || true; fi
		stop_server
		journal_sync
		v=$(journalctl --no-pager -o json --since "$since" MESSAGE_ID=$MID_VIOLATION PMALLOC_EXE="$exe" PMALLOC_POLICY="$POLICY" | head -n 1)
		if [ -z "$v" ]; then
			not_found || fail "$name: the injected write into \"$needle\" killed nothing: $(inject_said)"
			MISSED+=("$name: \"$needle\" (a kept configuration value) is not in protected memory")
			continue
		fi
		printf '%s' "$v" | grep -q "\"PMALLOC_POLICY\":\"$POLICY\"" || fail "$name: policy: $v"
		printf '%s' "$v" | grep -q '"PMALLOC_POOL":"learned"' || fail "$name: pool: $v"
		printf '%s' "$v" | grep -q '"PMALLOC_SIGNAL_NAME":"SIGSEGV"' || fail "$name: not killed: $v"
		site=$(printf '%s' "$v" | sed -n 's/.*"PMALLOC_OBJECT_SITE":"\([^"]*+0x[0-9a-f]*\)".*/\1/p')
		[ -n "$site" ] || fail "$name: the violation names no site: $v"
		proposed "$site" "$CONF" || fail "$name: site $site is not in the proposal"
		hit="a write into \"$needle\" killed in $site"
		break
	done
	[ -n "$hit" ] || hit="no kept configuration value protected to write into"
	pass "$name: generic learn, propose ($own bytes of ${exe##*/} protected, coverage $cov%), two loads in enforce mode without a kill; $hit"
}

# The load helpers: URLS N PARALLEL URL...: N requests each on a connection of its own,
# given up after LOAD_TIMEOUT seconds (30 unless said).
curl_load() {
	local n=$1 par=$2 urls=() i
	shift 2
	for i in $(seq "$n"); do urls+=("$1${i}"); done
	timeout "${LOAD_TIMEOUT:-30}" curl -s --no-progress-meter -m 3 -o /dev/null ${par:+--parallel --parallel-max "$par"} -H 'Connection: close' \
		-w '%{http_code}\n' "${urls[@]}" >"$T/load" || return 1
	[ "$(grep -c '^[0-9][0-9][0-9]$' "$T/load")" = "$n" ]
}

# LEARN_SERVERS="nginx redis lighttpd" (the default) names the servers to run.
want() { case " ${LEARN_SERVERS:-nginx redis lighttpd} " in *" $1 "*) return 0 ;; esac; return 1; }

if want nginx && [ -x /usr/sbin/nginx ]; then
	port=$((24000 + $$ % 900))
	mkdir -p "$T/ngx/logs" "$T/ngx/html"
	echo hello >"$T/ngx/html/index.html"
	echo other >"$T/ngx/html/other.html"
	chmod a+rx "$T" "$T/ngx" "$T/ngx/html"   # workers run as nobody under root
	cat >"$T/ngx/nginx.conf" <<EOC
worker_processes 1;
daemon off;
pid $T/ngx/nginx.pid;
error_log $T/ngx/logs/error.log;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path $T/ngx/body; proxy_temp_path $T/ngx/proxy;
  fastcgi_temp_path $T/ngx/fcgi; uwsgi_temp_path $T/ngx/uwsgi; scgi_temp_path $T/ngx/scgi;
  server { listen 127.0.0.1:$port; server_name Kept-Config-$$.Example; root $T/ngx/html; location / { } }
}
EOC
	ngx_start() {
		/usr/sbin/nginx -p "$T/ngx" -c "$T/ngx/nginx.conf" -e "$T/ngx/logs/error.log" >"$T/ngx/out" 2>&1 &
		SERVER_PID=$!
		wait_until 200 curl -sf -o /dev/null "http://127.0.0.1:$port/" || [ -n "${INJECTING:-}" ] ||
			fail "nginx did not come up: $(cat "$T/ngx/out" "$T/ngx/logs/error.log")"
	}
	ngx_load() { curl_load 50 "" "http://127.0.0.1:$port/?n="; }
	ngx_load2() {
		curl_load 100 16 "http://127.0.0.1:$port/other.html?k=" &&
		curl_load 50 16 "http://127.0.0.1:$port/missing-" && curl_load 20 16 "http://127.0.0.1:$port/index.html#"
	}
	cycle nginx "$(readlink -f /usr/sbin/nginx)" ngx_start ngx_load ngx_load2 "kept-config-$$.example" 163840
else
	echo "skipped: nginx not installed"
fi

if want redis && command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
	rport=$((24000 + ($$ + 300) % 900))
	pass_=kept-config-$$
	mkdir -p "$T/rds"
	rds_start() {
		redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --dir "$T/rds" --requirepass "$pass_" \
			--daemonize no --logfile "$T/rds/log" &
		SERVER_PID=$!
		wait_until 200 redis-cli -p "$rport" --no-auth-warning -a "$pass_" ping || [ -n "${INJECTING:-}" ] ||
			fail "redis did not come up: $(cat "$T/rds/log")"
	}
	rds_load() { timeout "${LOAD_TIMEOUT:-30}" redis-benchmark -p "$rport" -a "$pass_" -n 1000 -c 4 -q -t set,get,lpush,incr >/dev/null; }
	rds_load2() {
		local f=() i
		for i in $(seq 300); do f+=("field$i" "value$i"); done
		timeout 30 redis-benchmark -p "$rport" -a "$pass_" -n 1000 -c 16 -r 100000 -q -t set,get,hset,sadd,zadd,lpush,rpop >/dev/null &&
		redis-cli -p "$rport" --no-auth-warning -a "$pass_" hset grown "${f[@]}" >/dev/null &&
		redis-cli -p "$rport" --no-auth-warning -a "$pass_" rpush glist "${f[@]}" >/dev/null &&
		redis-cli -p "$rport" --no-auth-warning -a "$pass_" config get maxmemory >/dev/null
	}
	cycle redis "$(readlink -f "$(command -v redis-server)")" rds_start rds_load rds_load2 "client|no-evict $pass_" 51200
else
	echo "skipped: redis-server not installed"
fi

if want lighttpd && [ -x /usr/sbin/lighttpd ]; then
	lport=$((24000 + ($$ + 600) % 900))
	mkdir -p "$T/lt/www"
	echo hello >"$T/lt/www/index.html"
	echo other >"$T/lt/www/other.html"
	chmod a+rx "$T" "$T/lt" "$T/lt/www"
	# Debian's /etc/lighttpd/lighttpd.conf as shipped (its modules, parse
	# options, feature flags, the MIME table its script makes from
	# /etc/mime.types, the enabled conf snippets), with a private port and
	# paths, on loopback (no IPv6 listener), as root without a user switch.
	[ -x /usr/share/lighttpd/create-mime.conf.pl ] || [ -f /usr/share/lighttpd/create-mime.conf.pl ] ||
		fail "lighttpd: Debian's create-mime.conf.pl is missing"
	cat >"$T/lt/lighttpd.conf" <<EOC
server.modules = (
	"mod_indexfile",
	"mod_access",
	"mod_alias",
	"mod_redirect",
)
server.document-root        = "$T/lt/www"
server.upload-dirs          = ( "$T/lt" )
server.errorlog             = "$T/lt/error.log"
server.pid-file             = "$T/lt/lighttpd.pid"
server.port                 = $lport
server.bind                 = "127.0.0.1"
server.tag                  = "Kept-Config-$$"
server.feature-flags       += ("server.h2proto" => "enable")
server.feature-flags       += ("server.h2c"     => "enable")
server.feature-flags       += ("server.graceful-shutdown-timeout" => 5)
server.http-parseopts = (
  "header-strict"           => "enable",
  "host-strict"             => "enable",
  "host-normalize"          => "enable",
  "url-normalize-unreserved"=> "enable",
  "url-normalize-required"  => "enable",
  "url-ctrls-reject"        => "enable",
  "url-path-2f-decode"      => "enable",
  "url-path-dotseg-remove"  => "enable",
)
index-file.names            = ( "index.php", "index.html" )
url.access-deny             = ( "~", ".inc" )
static-file.exclude-extensions = ( ".php", ".pl", ".fcgi" )
include_shell "perl /usr/share/lighttpd/create-mime.conf.pl"
alias.url += ("/javascript" => "/usr/share/javascript")
server.modules += (
	"mod_dirlisting",
	"mod_staticfile",
)
EOC
	n=$(perl /usr/share/lighttpd/create-mime.conf.pl | grep -c '=>')
	[ "$n" -gt 100 ] || fail "lighttpd: the MIME table has $n entries"
	lt_start() {
		/usr/sbin/lighttpd -D -f "$T/lt/lighttpd.conf" >"$T/lt/out" 2>&1 &
		SERVER_PID=$!
		wait_until 200 curl -sf -o /dev/null "http://127.0.0.1:$lport/" || [ -n "${INJECTING:-}" ] ||
			fail "lighttpd did not come up: $(cat "$T/lt/out" "$T/lt/error.log" 2>/dev/null)"
	}
	lt_load() { curl_load 50 "" "http://127.0.0.1:$lport/?n="; }
	lt_load2() { curl_load 100 16 "http://127.0.0.1:$lport/other.html?k=" && curl_load 50 16 "http://127.0.0.1:$lport/missing-"; }
	cycle lighttpd /usr/sbin/lighttpd lt_start lt_load lt_load2 "Kept-Config-$$" 65536
else
	echo "skipped: lighttpd not installed"
fi

# A target not reached is said, never dropped (the README's table lists it).
for m in "${MISSED[@]}"; do
	echo "below target: $m"
done
