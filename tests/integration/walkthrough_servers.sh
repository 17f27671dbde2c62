#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# walkthrough_servers.sh - the README's "Harden a service" commands, as a
# user types them, on Debian's nginx (master as root, workers as nobody)
# and redis-server, on loopback, with the real pmallocd, shim and journald.
# Substituted: the unit name (a unit of this run, its program a copy of the
# server's named for this run, so that other runs of the same server in the
# shared journal are not this run's evidence), /etc/pmalloc.conf (a private
# file), the drop-in's root (--root), and systemctl: this machine has no
# booted systemd, so a stand-in ($PMALLOC_SYSTEMCTL, and first on PATH for
# the README's own "systemctl" lines) does what systemd would: show
# (ExecStart, MainPID, ExecReload), start and restart (the drop-in's
# LD_PRELOAD), reload (nginx: SIGHUP; redis has no ExecReload), stop
# (nginx: SIGQUIT, redis: SIGTERM), and pmallocd's reload-or-restart.
#
# Per server (README steps 1-6): learn -> the learn load -> exercise (nginx: reload, respawn,
# stop; redis: reload and respawn refused with their reasons, stop) ->
# propose in audit -> ready: not ready (exit 1, its reasons) -> a load the
# learn run never sent (nginx: other URLs, 404s, a reload and a respawn;
# redis: HSET, LPUSH, SET EX, SELECT 3, CONFIG GET, CLIENT LIST, INFO,
# EVAL) -> one report per site and process -> propose again (refine, still
# audit): exactly the sites audit saw written left out, each said once in
# a comment -> the same load under the refined policy, refined again, until
# a round sees no new write (8 rounds at most: leaving a site out moves
# which function an object is charged to, and audit reports a site once per
# process, so redis needs several) -> ready: ready (exit 0,
# --min-time 0), the audit run's reloads, respawns and clean stops counted
# per role, --json valid against man/pmallocctl-ready.schema.json ->
# propose --mode enforce -> the same load: zero kills.  The figures (sites left out, bytes protected, each round's
# new reports) go to stdout.
. "$(dirname "$0")/e2e_lib.sh"

journald_ensure
command -v python3 >/dev/null || skip "python3 not installed (to validate JSON)"
command -v curl >/dev/null || skip "curl not installed"
WANT=
[ -x /usr/sbin/nginx ] && WANT="nginx"
command -v redis-server >/dev/null && command -v redis-cli >/dev/null && WANT="$WANT redis"
[ -n "$WANT" ] || skip "neither nginx nor redis-server installed"
WANT=${WALK_SERVERS:-$WANT}

CTL=$B/pmallocctl
ROOT=$T/root                     # the drop-ins' root (preload --root)
F=$T/fake                        # the stand-in's state
mkdir -p "$T/bin" "$T/sbin" "$F" "$ROOT"
chmod a+rx "$T" "$T/sbin"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# The systemctl stand-in.  A unit U is known by $F/U.service/exe (its
# ExecStart program), start (a script run with the drop-in's LD_PRELOAD in
# its environment), stopsig, and reload when it has an ExecReload.
cat >"$T/bin/systemctl" <<EOF
#!/bin/bash
F=$F ROOT=$ROOT SOCK=$SOCK CONF=$CONF PMALLOCD=$B/pmallocd WIRE=$B/progs/wire_client CTL=$CTL
SHIM_DIR=$B NOFILE=$NOFILE DLOG=$T/daemon.log
EOF
cat >>"$T/bin/systemctl" <<'EOF'
unit() { case $1 in *.*) echo "$1" ;; *) echo "$1.service" ;; esac; }
# (a process reaped between the two looks is gone: State must be read, and not Z)
alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null && grep -q '^State:.[^Z]' "/proc/$1/status" 2>/dev/null; }
mainpid() { cat "$F/$1/pid" 2>/dev/null; }
# pmallocd's policy generation, as its status says: a reload is done when it
# has gone up (the unit's ExecReload returns at the signal, as kill does).
dgen() { "$CTL" status --socket "$SOCK" 2>/dev/null | sed -n 's/^policy file: .*, generation \([0-9]*\) .*/\1/p'; }
dreload() { # PID
	local g; g=$(dgen)
	kill -HUP "$1" || return 1
	for i in $(seq 200); do [ "$(dgen)" -gt "${g:-0}" ] 2>/dev/null && return 0; sleep 0.05; done
	return 1
}
dstart() {
	"$PMALLOCD" --config "$CONF" --socket "$SOCK" >>"$DLOG" 2>&1 </dev/null &
	echo $! >"$F/pmallocd.pid"
	for i in $(seq 200); do "$WIRE" --socket "$SOCK" --status >/dev/null 2>&1 && return 0; sleep 0.05; done
	return 1
}
ustop() { # UNIT
	local p; p=$(mainpid "$1")
	alive "$p" || return 0
	kill "-$(cat "$F/$1/stopsig")" "$p"
	for i in $(seq 200); do alive "$p" || return 0; sleep 0.05; done
	return 1
}
ustart() { # UNIT: the drop-in's LD_PRELOAD (the installed library: this build's)
	local pre= d=$ROOT/etc/systemd/system/$1.d/pmalloc.conf w
	if [ -f "$d" ]; then
		for w in $(sed -n 's/^Environment=LD_PRELOAD=//p' "$d"); do
			case $w in */libpmalloc_shim.so.0) w=$SHIM_DIR/libpmalloc_shim.so.0 ;; esac
			pre="$pre${pre:+ }$w"
		done
	fi
	rm -f "$F/$1/pid"
	LD_PRELOAD=$pre PMALLOC_SOCKET=$SOCK PMALLOC_CONF=$NOFILE bash "$F/$1/start" </dev/null >>"$F/$1/log" 2>&1 &
	echo $! >"$F/$1/pid"
	bash "$F/$1/up"
}
case $1 in
show)
	shift
	if [ "$1" = -P ]; then
		[ "$3" = -- ] && set -- "$1" "$2" "$4"
		u=$(unit "$3")
		[ -f "$F/$u/exe" ] || exit 1
		[ "$2" = ExecStart ] && echo "{ path=$(cat "$F/$u/exe") ; argv[]=$(cat "$F/$u/exe") ; ignore_errors=no ; }"
		exit 0
	fi
	[ "$1" = -p ] && shift 2
	u=$(unit "$1") p=$(mainpid "$u")
	if alive "$p"; then echo "MainPID=$p"; echo "ActiveState=active"; else echo "MainPID=0"; echo "ActiveState=inactive"; fi
	[ -f "$F/$u/reload" ] && echo "ExecReload={ path=/bin/kill ; argv[]=/bin/kill -HUP \$MAINPID ; }"
	exit 0 ;;
daemon-reload) exit 0 ;;
reload-or-restart|restart|reload|stop|start)
	u=$(unit "$2")
	if [ "$u" = pmallocd.service ]; then
		p=$(cat "$F/pmallocd.pid" 2>/dev/null)
		case $1 in
		reload*) if alive "$p"; then dreload "$p"; else dstart; fi ;;
		restart) alive "$p" && { kill -TERM "$p"; while alive "$p"; do sleep 0.05; done; }; dstart ;;
		*) exit 1 ;;
		esac
		exit
	fi
	[ -f "$F/$u/exe" ] || { echo "Unit $u not found." >&2; exit 5; }
	case $1 in
	stop) ustop "$u" ;;
	start) alive "$(mainpid "$u")" || ustart "$u" ;;
	restart|reload-or-restart) ustop "$u" && ustart "$u" ;;
	reload) [ -f "$F/$u/reload" ] || { echo "Failed to reload $u: Job type reload is not applicable for unit $u." >&2; exit 1; }
		p=$(mainpid "$u"); alive "$p" && kill -HUP "$p" && sleep 0.5 ;;
	esac ;;
*) exit 1 ;;
esac
EOF
chmod 0755 "$T/bin/systemctl"
export PATH=$T/bin:$PATH PMALLOC_SYSTEMCTL=$T/bin/systemctl PMALLOC_SOCKET=$SOCK

_walk_stop() {
	local f p
	for f in "$F"/*.service/pid "$F/pmallocd.pid"; do
		p=$(cat "$f" 2>/dev/null) || continue
		kill -TERM "$p" 2>/dev/null
	done
	sleep 0.2
	for f in "$F"/*.service/pid "$F/pmallocd.pid"; do
		p=$(cat "$f" 2>/dev/null) || continue
		kill -KILL "$p" 2>/dev/null
	done
	true
}
at_exit _walk_stop
_walk_keep() { [ -z "${WALK_KEEP:-}" ] || cp -a "$T" "$WALK_KEEP"; }
at_exit _walk_keep

sites_of() { sed -n '/sites = \[/,/\]/p' "$1" | grep -o '"[^"]*"' | sort -u; }
# The README's "check && reload-or-restart pmallocd && restart UNIT" line.
put_in_force() { # UNIT
	"$CTL" check "$CONF" >"$T/check" 2>&1 && systemctl reload-or-restart pmallocd && systemctl restart "$1" ||
		fail "$1: check, reload-or-restart pmallocd, restart: $(cat "$T/check" "$F/$1.service/log" 2>/dev/null | tail -n 20)"
}
violations() { # EXE SINCE [FILTER...]
	local exe=$1 since=$2
	shift 2
	journal_sync
	journalctl --no-pager -o json --since "$since" MESSAGE_ID=$MID_VIOLATION PMALLOC_EXE="$exe" "$@" 2>/dev/null
}

# settled FILTER...: once the entries of this run matching FILTER stop
# coming (two looks a second apart agree; 30 s at most).
settled() {
	local n=-1 m i
	for i in $(seq 30); do
		journal_sync 2>/dev/null
		m=$(jnow "$@" | grep -c .)
		[ "$m" = "$n" ] && return 0
		n=$m
		sleep 1
	done
}

# walk NAME UNIT EXE LEARN_LOAD AUDIT_LOAD EXERCISE_OK: the README's steps.
walk() {
	local name=$1 unit=$2 exe=$3 learn_load=$4 audit_load=$5 ex_ok=$6 rc since e n k mpid
	rm -f "$CONF" "$CONF.bak"
	# 1. learn, preload, in force
	"$CTL" learn "$unit" --output "$CONF" >"$T/out" 2>&1 || fail "$name: learn $unit: $(cat "$T/out")"
	grep -q "exe = \[ \"$exe\" \]" "$CONF" || fail "$name: learn $unit: not the unit's program: $(cat "$CONF")"
	chmod 0644 "$CONF"
	{ "$CTL" preload enable "$unit" --root "$ROOT" && systemctl daemon-reload; } >"$T/out" 2>&1 ||
		fail "$name: preload enable: $(cat "$T/out")"
	put_in_force "$unit"
	# 2. the usual load, then the life-cycle
	$learn_load || fail "$name: the learn load failed"
	rc=0; "$CTL" exercise "$unit" --reload --respawn --stop >"$T/ex" 2>&1 || rc=$?
	[ "$rc" = "$ex_ok" ] || fail "$name: exercise exit $rc (want $ex_ok): $(cat "$T/ex")"
	grep -q "^  check: $unit.service inactive, main PID [0-9]* gone" "$T/ex" || fail "$name: exercise: no stop: $(cat "$T/ex")"
	pass "$name: learn $unit, preload enable, the learn load, exercise: $(grep -E '^(reload|respawn|stop):' "$T/ex" | tr '\n' ';' | sed 's/;$//')"
	# What the main process learned goes to the journal as it exits, after
	# its workers': propose once it is there and no more comes (two looks
	# a second apart agree).
	mpid=$(sed -n 's/^[^ ]*: main PID \([0-9]*\),.*/\1/p' "$T/ex")
	wait_until 400 sh -c "journalctl --no-pager -o json --since '$E2E_SINCE' MESSAGE_ID=$MID_LEARNED _PID=$mpid PMALLOC_EXE='$exe' | grep -q ." ||
		fail "$name: nothing learned by the main process $mpid in the journal"
	settled MESSAGE_ID=$MID_LEARNED PMALLOC_EXE="$exe"
	# 3. the proposal, in audit
	"$CTL" propose --exe "$exe" --mode audit --output "$CONF" >/dev/null 2>"$T/err" || fail "$name: propose: $(cat "$T/err")"
	grep -q '^    mode = "audit";' "$CONF" || fail "$name: not audit: $(cat "$CONF")"
	[ -f "$CONF.bak" ] || fail "$name: no $CONF.bak"
	sites_of "$CONF" >"$T/$name.sites.audit"
	[ -s "$T/$name.sites.audit" ] || fail "$name: the proposal names no site: $(cat "$CONF")"
	cp "$CONF" "$T/$name.audit.conf"
	since=@$(date +%s.%6N)
	put_in_force "$unit"
	# (pmallocd says what it handed out after the process has it: a user
	# typing the next command is slower than that, this script waits.)
	wait_until 200 sh -c "journalctl --sync; journalctl --no-pager -o json --since '$since' MESSAGE_ID=$MID_HANDED PMALLOC_MODE=audit PMALLOC_EXE='$exe' | grep -q ." ||
		fail "$name: no hand-out in audit mode in the journal"
	# ready before the audit load: not ready, with its reasons
	rc=0; "$CTL" ready --exe "$exe" --config "$CONF" >"$T/ready" 2>&1 || rc=$?
	[ $rc = 1 ] && grep -q '^not ready:' "$T/ready" && grep -q 'less than 24h00min (--min-time)' "$T/ready" ||
		fail "$name: ready before the audit load: exit $rc: $(cat "$T/ready")"
	pass "$name: propose (audit, $(grep -c . "$T/$name.sites.audit") sites); ready before the audit load: not ready ($(grep -- '  - ' "$T/ready" | head -n 1 | sed 's/^ *- //'))"
	# 4. a load the learn run never sent, the life-cycle among it; refine;
	# again under the refined policy until a round sees no new write (a
	# context left out can make another one the site of what it wrote).
	local round=0 rsince s said before after rounds=
	while :; do
		round=$((round + 1))
		rsince=@$(date +%s.%6N)
		$audit_load || fail "$name: the audit load failed"
		rc=0; "$CTL" exercise "$unit" --reload --respawn >"$T/ex" 2>&1 || rc=$?
		[ "$rc" = "$ex_ok" ] || fail "$name: exercise in audit: exit $rc: $(cat "$T/ex")"
		$audit_load || fail "$name: the audit load failed after exercise"
		settled MESSAGE_ID=$MID_VIOLATION PMALLOC_EXE="$exe"
		e=$(violations "$exe" "$rsince" PMALLOC_MODE=audit)
		n=$(printf '%s\n' "$e" | grep -c .)
		k=$(printf '%s\n' "$e" | jfield OBJECT_PID | paste -d ' ' - <(printf '%s\n' "$e" | jfield PMALLOC_OBJECT_SITE) | sort -u | grep -c .)
		[ "$n" = "$k" ] || fail "$name: audit round $round: $n reports of $k site-process pairs (want one each)"
		grep -q 'SIGSEGV' <(printf '%s\n' "$e") && fail "$name: audit killed: $e"
		rounds="$rounds${rounds:+, }$n"
		[ $round -gt 1 ] && [ "$n" = 0 ] && break
		[ $round -le 8 ] || fail "$name: audit round $round still saw $n new writes: $(printf '%s\n' "$e" | jfield PMALLOC_OBJECT_SITE | sort -u | tr '\n' ' ')"
		# every site written since the audit began
		violations "$exe" "$since" PMALLOC_MODE=audit | jfield PMALLOC_OBJECT_SITE | sort -u | grep . >"$T/$name.written" || true
		pass "$name: audit round $round: $n reports, one per site and process; $(grep -c . "$T/$name.written") sites written in all: $(tr '\n' ' ' <"$T/$name.written")"
		# (in later rounds the site a write names may be one the file
		# names no longer: ready's verdict is the file's, not checked here)
		if [ "$n" != 0 ] && [ $round = 1 ]; then
			journal_sync
			rc=0; "$CTL" ready --exe "$exe" --config "$CONF" --min-time 0 >"$T/ready" 2>&1 || rc=$?
			[ $rc = 1 ] && grep -q 'was written in audit (by .*) and the policy still names it' "$T/ready" ||
				fail "$name: ready after audit round $round: exit $rc: $(cat "$T/ready")"
		fi
		# refine: the proposal again, in audit (README step 4)
		"$CTL" propose --exe "$exe" --output "$CONF" >/dev/null 2>"$T/err" || fail "$name: refine: $(cat "$T/err")"
		grep -q '^    mode = "audit";' "$CONF" || fail "$name: refine: not audit"
		sites_of "$CONF" >"$T/$name.sites.refined"
		cp "$CONF" "$T/$name.refined$round.conf"
		# A site audit saw written is an allocation context (a return
		# address in the function that called the allocator); the list
		# names functions and wrappers: leaving a context out shrinks its
		# function's contexts, or drops the function.  What must hold:
		# every written site said, once, and nothing else said.
		said=0
		while read -r s; do
			[ "$(grep -cF -e "# Left out after audit: the site \"$s\", written by \"" \
				-e "# Written in audit, no site proposed: \"$s\", written by \"" "$CONF")" = 1 ] ||
				fail "$name: refine: site $s written in audit, not said once: $(grep -e '# Left out after audit' -e '# Written in audit' "$CONF")"
			said=$((said + 1))
		done <"$T/$name.written"
		[ "$(grep -c -e '# Left out after audit: ' -e '# Written in audit, no site proposed: ' "$CONF")" = "$said" ] ||
			fail "$name: refine: $(grep -c -e '# Left out after audit: ' -e '# Written in audit' "$CONF") sites said left out, audit saw $said written"
		before=$(sed -n 's/^    # protected: \([0-9]*\) bytes live in \([0-9]*\) sites.*/\1 \2/p' "$T/$name.audit.conf")
		after=$(sed -n 's/^    # protected: \([0-9]*\) bytes live in \([0-9]*\) sites.*/\1 \2/p' "$CONF")
		[ "${after%% *}" -le "${before%% *}" ] || fail "$name: refine protects more: $before -> $after"
		[ "$said" = 0 ] && { [ "$before" = "$after" ] || fail "$name: nothing written, yet the proposal changed: $before -> $after"; }
		LEFT="$said written sites left out ($(grep -c "# Left out after audit: " "$CONF") of them in the proposal), protected bytes and sites ${before/ / in } -> ${after/ / in }"
		pass "$name: refine $round: $LEFT; each said: $(grep -e '# Left out after audit: ' -e '# Written in audit, no site' "$CONF" | sed 's/^ *# //' | tr '\n' ';')"
		put_in_force "$unit"
		[ "$n" = 0 ] && break
	done
	LEFT="$LEFT; audit rounds' new reports: $rounds"
	# 5. ready? then the enforce policy
	journal_sync
	rc=0; "$CTL" ready --exe "$exe" --config "$CONF" --min-time 0 >"$T/ready" 2>&1 || rc=$?
	[ $rc = 0 ] && grep -q '^ready' "$T/ready" || fail "$name: ready after refining: exit $rc: $(cat "$T/ready")"
	# the audit run's life-cycle, per role: the main process reloaded
	# (nginx) and stopped cleanly (each restart above); nginx's workers
	# started by reloads, one respawned, the old ones stopped
	grep -Eq '^  role main: [1-9][0-9]* processes, [0-9]+ reloads, 0 respawns, [1-9][0-9]* stops seen$' "$T/ready" ||
		fail "$name: ready: the main process's stops not counted: $(cat "$T/ready")"
	if [ "$name" = nginx ]; then
		grep -Eq '^  role main: [0-9]+ processes, [1-9][0-9]* reloads' "$T/ready" &&
			grep -Eq '^  role child: [1-9][0-9]* processes, [1-9][0-9]* reloads, [1-9][0-9]* respawns, [1-9][0-9]* stops seen$' "$T/ready" ||
			fail "$name: ready: reloads, respawns, stops not all counted: $(cat "$T/ready")"
		grep -q 'note: ' "$T/ready" && fail "$name: ready: a life-cycle event said not seen: $(cat "$T/ready")"
	fi
	"$CTL" ready --exe "$exe" --config "$CONF" --min-time 0 --json >"$T/ready.json" || fail "$name: ready --json: exit $?"
	json_schema_check "$SRC/man/pmallocctl-ready.schema.json" "$T/ready.json" ||
		fail "$name: ready --json does not fit its schema: $(cat "$T/ready.json")"
	grep -q '"ready": true' "$T/ready.json" || fail "$name: ready --json: $(cat "$T/ready.json")"
	pass "$name: ready after refining (--json fits its schema): $(grep -v '^ready' "$T/ready" | tr -s ' \n' ' ')"
	"$CTL" propose --exe "$exe" --mode enforce --output "$CONF" >/dev/null 2>"$T/err" || fail "$name: propose --mode enforce: $(cat "$T/err")"
	grep -q '^    mode = "enforce";' "$CONF" || fail "$name: not enforce"
	sites_of "$CONF" | cmp -s - "$T/$name.sites.refined" || fail "$name: the enforce proposal's sites are not the refined ones"
	put_in_force "$unit"
	since=@$(date +%s.%6N)
	$learn_load || fail "$name: the learn load failed in enforce"
	$audit_load || fail "$name: the audit load failed in enforce"
	[ "$name" = nginx ] && { "$CTL" exercise "$unit" --reload --respawn >"$T/ex" 2>&1 || fail "$name: exercise in enforce: $(cat "$T/ex")"; }
	$audit_load || fail "$name: the audit load failed in enforce after exercise"
	systemctl stop "$unit" || fail "$name: stop in enforce"
	e=$(violations "$exe" "$since")
	[ -z "$e" ] || fail "$name: enforce: $(printf '%s\n' "$e" | grep -c .) violations: $(printf '%s\n' "$e" | head -n 2)"
	printf 'figures: %s: %s; enforce: %s\n' "$name" "$LEFT" "$(sed -n 's/^    # protected: //p' "$CONF" | head -n 1)"
	pass "$name: enforce under the audit load$([ "$name" = nginx ] && echo ', a reload and a respawn'): zero kills"
}

curl_n() { # N URL-PREFIX: N requests, each answered with a status
	local i urls=()
	for i in $(seq "$1"); do urls+=("$2$i"); done
	timeout 30 curl -s -m 3 -o /dev/null -H 'Connection: close' -w '%{http_code}\n' "${urls[@]}" >"$T/load" || return 1
	[ "$(grep -c '^[0-9][0-9][0-9]$' "$T/load")" = "$1" ]
}

if [[ " $WANT " == *" nginx "* ]]; then
	U=nginx-walk$$ N=$T/ngx
	NEXE=$T/sbin/nginx-walk$$
	cp /usr/sbin/nginx "$NEXE"
	port=$(free_port)
	mkdir -p "$N/html" "$F/$U.service"
	echo hello >"$N/html/index.html"
	echo other >"$N/html/other.html"
	chmod a+rx "$N" "$N/html"
	cat >"$N/nginx.conf" <<EOC
worker_processes 2;
daemon off;
pid $N/nginx.pid;
error_log $N/error.log;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path $N/body; proxy_temp_path $N/proxy;
  fastcgi_temp_path $N/fcgi; uwsgi_temp_path $N/uwsgi; scgi_temp_path $N/scgi;
  server { listen 127.0.0.1:$port; root $N/html; location / { } }
}
EOC
	echo "$NEXE" >"$F/$U.service/exe"
	echo QUIT >"$F/$U.service/stopsig"
	touch "$F/$U.service/reload"
	echo "exec '$NEXE' -p '$N' -c '$N/nginx.conf' -e '$N/error.log'" >"$F/$U.service/start"
	echo "for i in \$(seq 200); do curl -sf -o /dev/null http://127.0.0.1:$port/ && exit 0; sleep 0.05; done; exit 1" >"$F/$U.service/up"
	ngx_learn() { curl_n 30 "http://127.0.0.1:$port/?n="; }
	ngx_audit() { curl_n 20 "http://127.0.0.1:$port/other.html?k=" && curl_n 10 "http://127.0.0.1:$port/missing-" &&
		grep -q '^404$' "$T/load"; }
	walk nginx "$U" "$NEXE" ngx_learn ngx_audit 0
	# (exercise's respawn kills a worker by SIGKILL: 9 is no crash)
	grep -q 'exited on signal 11' "$N/error.log" && fail "nginx: a worker died: $(grep 'exited on signal 11' "$N/error.log")"
fi

if [[ " $WANT " == *" redis "* ]]; then
	U=redis-walk$$ R=$T/rds
	REXE=$T/sbin/redis-server-walk$$
	cp "$(readlink -f "$(command -v redis-server)")" "$REXE"
	rport=$(free_port)
	mkdir -p "$R" "$F/$U.service"
	echo "$REXE" >"$F/$U.service/exe"
	echo TERM >"$F/$U.service/stopsig"
	echo "exec '$REXE' --port $rport --bind 127.0.0.1 --save '' --appendonly no --dir '$R' --daemonize no --logfile '$R/log'" >"$F/$U.service/start"
	echo "for i in \$(seq 200); do redis-cli -p $rport ping >/dev/null 2>&1 && exit 0; sleep 0.05; done; exit 1" >"$F/$U.service/up"
	rcli() { timeout 20 redis-cli -p "$rport" "$@"; }
	rds_learn() {
		local i
		for i in $(seq 100); do printf 'SET key%d value%d\nGET key%d\n' "$i" "$i" "$i"; done | rcli >"$T/rload" &&
			[ "$(grep -c '^OK$' "$T/rload")" = 100 ]
	}
	rds_audit() {
		local i
		for i in $(seq 20); do printf 'HSET h%d f v\nLPUSH l%d a\nSET e%d v EX 600\n' "$i" "$i" "$i"; done | rcli >"$T/rload" || return 1
		printf 'SELECT 3\nSET k3 v\nGET k3\n' | rcli >"$T/rload" && [ "$(grep -c '^OK$' "$T/rload")" = 2 ] || return 1
		rcli CONFIG GET maxmemory >/dev/null && rcli CLIENT LIST >/dev/null && rcli INFO >/dev/null &&
			rcli EVAL 'return redis.call("GET", KEYS[1])' 1 key1 >/dev/null
	}
	walk redis "$U" "$REXE" rds_learn rds_audit 1
	grep -q 'reload: refused: .* has no ExecReload' "$T/ex" || fail "redis: exercise did not refuse the reload: $(cat "$T/ex")"
fi
exit 0
