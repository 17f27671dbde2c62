# learn_servers.sh - learn -> propose -> enforce on Debian's nginx and
# redis-server, each on loopback with a private configuration, under a
# short bounded load (curl, redis-benchmark):
#   - learn mode ("sites = [ "*" ]", protected at the first epoll_wait):
#     the load succeeds, nothing is killed, the journal gets the sites;
#   - pmallocctl propose: a policy pmallocctl check accepts without warning;
#   - enforce with the proposal under the same load: zero kills;
#   - the same with liblearn_inject.so preloaded, which writes into the
#     first protected page after N epoll_wait calls: the worker dies by
#     SIGSEGV and the journal names the policy, the pool and a site that
#     the proposal lists.
. "$(dirname "$0")/lib.sh"

SHIM=$B/libpmalloc_shim.so
INJECT=$B/progs/liblearn_inject.so
MID_LEARNED=81abfd4bd92b4d58b67b434bbf0f7ac1
MID_VIOLATION=7df8f2fd7e8542c19da1343c00501acc
[ -f "$INJECT" ] || fail "$INJECT is missing: run make check"
command -v journalctl >/dev/null || skip "journalctl not installed"
journald_ensure
unset PMALLOC_DEBUG
export PMALLOC_SOCKET=$T/no-daemon.sock

SERVER_PID=
stop_server() {
	[ -n "$SERVER_PID" ] || return 0
	kill "$SERVER_PID" 2>/dev/null
	wait "$SERVER_PID" 2>/dev/null
	SERVER_PID=
}
at_exit stop_server

learn_conf() { # NAME EXE
	cat >"$T/learn.conf" <<EOC
version = 1;
policies = ( { name = "$1"; match = { exe = [ "$2" ]; }; mode = "learn";
  pools = ( { name = "config"; sites = [ "*" ]; protect = [ "on-call:epoll_wait" ]; } ); } );
EOC
}

# kills NAME EXE SINCE: the number of violation entries of EXE since SINCE.
kills() {
	journal_sync
	journalctl --no-pager -o json --since "$3" MESSAGE_ID=$MID_VIOLATION PMALLOC_EXE="$2" | grep -c . || true
}

# cycle NAME EXE START_FN LOAD_FN (START_FN runs with the policy file and
# the preload in its environment; it sets SERVER_PID)
cycle() {
	local name=$1 exe=$2 start=$3 load=$4 since n sites site
	learn_conf "$name" "$exe"
	since=@$(date +%s)
	PMALLOC_CONF=$T/learn.conf LD_PRELOAD=$SHIM $start
	$load || fail "$name: load failed in learn mode"
	stop_server
	[ "$(kills "$name" "$exe" "$since")" = 0 ] || fail "$name: learn mode killed"
	n=$(journalctl --no-pager -o json --since "$since" MESSAGE_ID=$MID_LEARNED PMALLOC_EXE="$exe" | grep -c .)
	[ "$n" -gt 0 ] || fail "$name: nothing learned"
	# Entries count when root or a user named with --uid wrote them: nginx's
	# workers run as nobody here (as www-data on a Debian system).
	"$B/pmallocctl" propose --exe "$exe" --since "$since" --uid nobody --output "$T/$name.conf" 2>"$T/err" ||
		fail "$name: propose: $(cat "$T/err")"
	"$B/pmallocctl" check "$T/$name.conf" >"$T/check" 2>&1 || fail "$name: check: $(cat "$T/check")"
	grep -qi warning "$T/check" && fail "$name: check warns: $(cat "$T/check")"
	sites=$(sed -n 's/^# \([0-9]*\) sites in .* pools, \([0-9]*\) bytes protected when learned\./\1 sites, \2 bytes/p' "$T/$name.conf")

	since=@$(date +%s)
	PMALLOC_CONF=$T/$name.conf LD_PRELOAD=$SHIM $start
	$load || fail "$name: load failed in enforce mode"
	stop_server
	[ "$(kills "$name" "$exe" "$since")" = 0 ] || fail "$name: the proposal killed under the load it was learned from"
	n=$(journalctl --no-pager -o json --since "$since" MESSAGE_ID=4861793aed344e45916acf02f15da997 PMALLOC_POLICY="$name" PMALLOC_POOL=config | grep -c .)
	[ "$n" -gt 0 ] || fail "$name: the proposal protected nothing"

	since=@$(date +%s)
	LEARN_INJECT_AFTER=20 PMALLOC_CONF=$T/$name.conf LD_PRELOAD="$INJECT $SHIM" $start
	$load >/dev/null 2>&1 || true
	stop_server
	journal_sync
	local v
	v=$(journalctl --no-pager -o json --since "$since" MESSAGE_ID=$MID_VIOLATION PMALLOC_EXE="$exe" | head -n 1)
	[ -n "$v" ] || fail "$name: the injected write killed nothing"
	printf '%s' "$v" | grep -q "\"PMALLOC_POLICY\":\"$name\"" || fail "$name: policy: $v"
	printf '%s' "$v" | grep -q '"PMALLOC_POOL":"config"' || fail "$name: pool: $v"
	printf '%s' "$v" | grep -q '"PMALLOC_SIGNAL_NAME":"SIGSEGV"' || fail "$name: not killed: $v"
	site=$(printf '%s' "$v" | sed -n 's/.*"PMALLOC_OBJECT_SITE":"\([^"+]*\)+0x[0-9a-f]*".*/\1/p')
	[ -n "$site" ] || fail "$name: the violation names no site: $v"
	grep -q "[\":]$site\"" "$T/$name.conf" || grep -q "^ *# *$site:" "$T/$name.conf" ||
		grep -q "$site" "$T/$name.conf" || fail "$name: site $site is not in the proposal"
	pass "$name: learn, propose ($sites), enforce under load without a kill, injected write killed in $site"
}

# nginx: master and one worker, a private prefix, loopback.
if command -v nginx >/dev/null && [ -x /usr/sbin/nginx ]; then
	NGX_PORT=$((20000 + $$ % 20000))
	mkdir -p "$T/ngx/logs" "$T/ngx/html"
	echo hello >"$T/ngx/html/index.html"
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
  server { listen 127.0.0.1:$NGX_PORT; root $T/ngx/html; location / { } }
}
EOC
	ngx_start() {
		/usr/sbin/nginx -p "$T/ngx" -c "$T/ngx/nginx.conf" -e "$T/ngx/logs/error.log" \
			>"$T/ngx/out" 2>&1 &
		SERVER_PID=$!
		wait_until 100 curl -sf -o /dev/null "http://127.0.0.1:$NGX_PORT/" ||
			fail "nginx did not come up: $(cat "$T/ngx/out" "$T/ngx/logs/error.log")"
	}
	ngx_load() {
		local i
		for i in $(seq 50); do
			curl -sf -m 5 -o /dev/null "http://127.0.0.1:$NGX_PORT/" || return 1
		done
	}
	cycle nginx /usr/sbin/nginx ngx_start ngx_load
else
	echo "skipped: nginx not installed"
fi

if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
	RDS_PORT=$((20000 + ($$ + 7) % 20000))
	RDS=$(readlink -f "$(command -v redis-server)")
	mkdir -p "$T/rds"
	rds_start() {
		redis-server --port "$RDS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$T/rds" \
			--daemonize no --logfile "$T/rds/log" &
		SERVER_PID=$!
		wait_until 100 redis-cli -p "$RDS_PORT" ping ||
			fail "redis did not come up: $(cat "$T/rds/log")"
	}
	rds_load() { redis-benchmark -p "$RDS_PORT" -n 2000 -c 4 -q -t set,get,lpush,incr >/dev/null; }
	cycle redis "$RDS" rds_start rds_load
else
	echo "skipped: redis-server not installed"
fi
