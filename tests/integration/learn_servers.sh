# learn_servers.sh - learn -> propose -> enforce on Debian's nginx and
# redis-server, each on loopback with a private configuration, under a
# short bounded load (curl, redis-benchmark):
#   - learn mode, protected at the first epoll_wait, with the servers'
#     allocation wrappers listed so that the sites are their callers: the
#     load succeeds, nothing is killed, the journal gets the sites;
#   - pmallocctl propose: a policy pmallocctl check accepts without warning,
#     with the same wrappers, a pool "config" of at least MIN_BYTES and a
#     site of the server's own configuration code;
#   - enforce with the proposal under the same load: zero kills;
#   - the same with liblearn_inject.so preloaded, which writes, after N
#     epoll_wait calls, into a value of the configuration the server keeps
#     (nginx: its server name as nginx lower-cased it; redis: the name of
#     a subcommand as its command table keeps it), found in protected memory: the worker dies by SIGSEGV
#     and the journal names the policy, pool "config" and a site that the
#     proposal lists.
. "$(dirname "$0")/lib.sh"

SHIM=$B/libpmalloc_shim.so
INJECT=$B/progs/liblearn_inject.so
MID_LEARNED=81abfd4bd92b4d58b67b434bbf0f7ac1
MID_VIOLATION=7df8f2fd7e8542c19da1343c00501acc
MID_PROTECTED=4861793aed344e45916acf02f15da997
MID_UNMATCHED=1bbefd08c466424b957c3ee5b5856dbf
[ -f "$INJECT" ] || fail "$INJECT is missing: run make check"
command -v journalctl >/dev/null || skip "journalctl not installed"
journald_ensure
unset PMALLOC_DEBUG
export PMALLOC_SOCKET=$T/no-daemon.sock

# nginx: one pool.  Its region pools get their blocks from ngx_create_pool
# and from two static functions that ngx_palloc and ngx_pnalloc jump to
# (ngx_palloc_block, ngx_palloc_large: no symbol in the stripped binary);
# their calls of ngx_memalign and ngx_alloc are wrappers by offset, found
# in the code (objdump), so that a block's site is the code that asked the
# pool for memory: nginx's configuration code for the cycle pool's blocks.
ngx_block_calls() { # EXE: "OBJECT@BUILD-ID:+0xOFFSET" of each such call
	local exe=$1 start size t lo hi id
	command -v objdump >/dev/null && command -v readelf >/dev/null || return 0
	id=$(readelf -n "$exe" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
	read -r start size < <(nm -D -S "$exe" | awk '$4 == "ngx_palloc" { print $1, $2 }')
	[ -n "$size" ] && [ -n "$id" ] || return 0
	lo=$((0x$start)) hi=$((0x$start + 0x$size))
	for t in $(objdump -d --no-show-raw-insn --start-address=$lo --stop-address=$hi "$exe" |
		awk '$2 == "jmp" { print $3 }' | sort -u); do
		[ $((0x$t)) -lt $lo ] || [ $((0x$t)) -ge $hi ] || continue
		objdump -d --no-show-raw-insn --start-address=$((0x$t)) --stop-address=$((0x$t + 512)) "$exe" |
			awk -v obj="${exe##*/}@$id" 'found { sub(":", "", $1); printf ", \"%s:+0x%s\"", obj, $1; exit }
				$2 == "call" && $4 ~ /^<ngx_(memalign|alloc)@/ { found = 1 }'
	done
}
NGX_POOLS='{ name = "config"; sites = [ "*" ]; protect = [ "on-call:epoll_wait" ];
  wrappers = [ "ngx_alloc", "ngx_calloc", "ngx_memalign", "ngx_create_pool", "ngx_palloc", "ngx_pnalloc",
  "ngx_pcalloc", "ngx_pmemalign", "ngx_array_create", "ngx_array_push", "ngx_array_push_n", "ngx_list_create",
  "ngx_list_push", "ngx_pstrdup", "ngx_hash_init", "ngx_hash_wildcard_init", "ngx_hash_add_key",
  "ngx_hash_keys_array_init", "ngx_create_temp_buf", "ngx_alloc_chain_link", "ngx_pool_cleanup_add"'"$(ngx_block_calls /usr/sbin/nginx)"' ]; }'
# redis: the configuration code's sites in a pool of their own, apart from
# the dictionaries' entries and tables (dictAdd*, _dictExpand are not
# wrappers), which redis rewrites when it rehashes them incrementally at
# run time: learning marks whole pages, and a page shared with them would
# be left out.
RDS_POOLS='{ name = "config"; protect = [ "on-call:epoll_wait" ];
  sites = [ "loadServerConfig*", "initServerConfig", "initConfigValues", "registerConfigValue", "populateCommand*",
    "commandAddSubcommand", "ACL*" ];
  wrappers = [ "zmalloc", "zcalloc", "zrealloc", "ztry*", "z*_usable", "zcalloc_num", "zstrdup", "_sdsnewlen",
  "sdsnewlen", "sdsnew", "sdsempty", "sdsdup", "_sdsMakeRoomFor", "sdsMakeRoomFor*", "sdscat*", "sdscpy*",
  "sdsgrowzero" ]; },
{ name = "other"; sites = [ "*" ]; protect = [ "on-call:epoll_wait" ]; }'

SERVER_PID=
stop_server() {
	[ -n "$SERVER_PID" ] || return 0
	kill "$SERVER_PID" 2>/dev/null
	wait "$SERVER_PID" 2>/dev/null
	SERVER_PID=
}
at_exit stop_server

learn_conf() { # NAME EXE POOLS
	cat >"$T/learn.conf" <<EOC
version = 1;
policies = ( { name = "$1"; match = { exe = [ "$2" ]; }; mode = "learn";
  pools = ( $3 ); } );
EOC
}

reverse() { local s=$1 r= i; for ((i = ${#s} - 1; i >= 0; i--)); do r+=${s:i:1}; done; printf %s "$r"; }

# kills NAME EXE SINCE: the number of violation entries of EXE since SINCE.
kills() {
	journal_sync
	journalctl --no-pager -o json --since "$3" MESSAGE_ID=$MID_VIOLATION PMALLOC_EXE="$2" | grep -c . || true
}

# The first "pool protected" entry of pool POOL since SINCE: its bytes
# (everything the pool took before the first trigger: start-up and
# configuration).
first_protected() { # NAME POOL SINCE
	journalctl --no-pager -o json --since "$3" MESSAGE_ID=$MID_PROTECTED PMALLOC_POLICY="$1" PMALLOC_POOL="$2" |
		head -n 1 | sed -n 's/.*"PMALLOC_PROTECTED_BYTES":"\([0-9]*\)".*/\1/p'
}

# Is SITE (a violation's "FUNCTION+0xOFF" or "OBJECT+0xOFF") a site of the
# proposal: by function name, or by offset in its object?
proposed() { # SITE FILE
	local name=${1%+0x*} off=${1##*+0x}
	grep -q "\"[^\"]*:$name\"" "$2" || grep -Eq "\"$name(@[0-9a-f]+)?:\\+0x$off\"" "$2"
}

# The wrappers of a proposal, one a line.
wrappers_of() { grep -v '^ *#' "$1" | tr -d ' \n' | sed -n 's/.*wrappers=\[\([^]]*\)\].*/\1/p' | tr , '\n'; }

# cycle NAME EXE START_FN LOAD_FN POOLS NEEDLE MIN_BYTES CONFIG_SITES
#   START_FN runs with the policy file and the preload in its environment
#   and sets SERVER_PID; POOLS is the learn policy's pools; NEEDLE a value
#   of the configuration the server keeps (not as written in its
#   configuration, nor in its arguments or environment); MIN_BYTES the
#   least the proposal's pool "config" must hold; CONFIG_SITES an
#   extended regular expression that some proposed site of the server's
#   own configuration code matches.
cycle() {
	local name=$1 exe=$2 start=$3 load=$4 pools=$5 needle=$6 min=$7 config_sites=$8 since n sites site bytes v learned
	learn_conf "$name" "$exe" "$pools"
	# Each phase's entries from its start to the microsecond: a whole
	# second took in the end of the run before (this test's, of another
	# tree, run just before: its injected kill failed "learn mode killed").
	since=@$(date +%s.%6N)
	PMALLOC_CONF=$T/learn.conf LD_PRELOAD=$SHIM $start
	# Learn from more of the load than enforce will see: a site whose
	# memory is written only now and then (a request that spans two turns
	# of the event loop) must be seen written to be left out.
	for n in 1 2 3; do $load || fail "$name: load failed in learn mode"; done
	stop_server
	[ "$(kills "$name" "$exe" "$since")" = 0 ] || fail "$name: learn mode killed"
	# Every wrapper and site of the learn policy matched (wrappers by offset too).
	n=$(journalctl --no-pager -o json --since "$since" MESSAGE_ID=$MID_UNMATCHED PMALLOC_EXE="$exe" | grep -c . || true)
	[ "$n" = 0 ] || fail "$name: rules matched nothing: $(journalctl --no-pager --since "$since" MESSAGE_ID=$MID_UNMATCHED PMALLOC_EXE="$exe")"
	n=$(journalctl --no-pager -o json --since "$since" MESSAGE_ID=$MID_LEARNED PMALLOC_EXE="$exe" | grep -c .)
	[ "$n" -gt 0 ] || fail "$name: nothing learned"
	# Entries count when root or a user named with --uid wrote them: nginx's
	# workers run as nobody here (as www-data on a Debian system).
	"$B/pmallocctl" propose --exe "$exe" --since "$since" --uid nobody --output "$T/$name.conf" 2>"$T/err" ||
		fail "$name: propose: $(cat "$T/err")"
	[ -z "${KEEP:-}" ] || cp "$T/$name.conf" "$KEEP/"
	"$B/pmallocctl" check "$T/$name.conf" >"$T/check" 2>&1 || fail "$name: check: $(cat "$T/check")"
	grep -qi warning "$T/check" && fail "$name: check warns: $(cat "$T/check")"
	sites=$(sed -n 's/^# \([0-9]*\) sites in .* pools, \([0-9]*\) bytes protected when learned\./\1 sites, \2 bytes/p' "$T/$name.conf")
	# The totals add up the sites listed (a function named once for all
	# its call sites counts all of them).
	n=$(grep '^ *#   ' "$T/$name.conf" | grep -v 'left out\|#   pool "' |
		sed -n 's/.* objects, \([0-9]*\) bytes.*/\1/p' | awk '{ t += $1 } END { print t + 0 }')
	[ "$n bytes" = "${sites##*, }" ] ||
		fail "$name: the sites listed hold $n bytes, the total says ${sites##*, }"
	learned=$(sed -n 's/^ *#   pool "config": [0-9]* sites, \([0-9]*\) bytes protected when learned$/\1/p' "$T/$name.conf")
	[ "${learned:-0}" -ge "$min" ] ||
		fail "$name: the proposal's pool config holds ${learned:-no} bytes, expected $min or more: $(grep '^ *#' "$T/$name.conf")"
	# The callers of the wrappers were learned as sites: enforce mode must
	# look through the same wrappers, or those sites take nothing.
	grep -v "^ *#" "$T/$name.conf" | tr -d " \n" | grep -q "wrappers=\[\"" ||
		fail "$name: the proposal lost the wrappers: $(cat "$T/$name.conf")"
	grep -q '^ *max_bytes = [0-9]*;$' "$T/$name.conf" || fail "$name: the proposal has no max_bytes"
	# Both servers allocate from some sites while they serve (nginx's
	# request pools, redis's AUTH): those come and go with the load and are
	# left out, whether or not this load happened to write them.
	grep -q '^ *#   left out .* after the first trigger: it allocates while the program serves' "$T/$name.conf" ||
		fail "$name: no site that allocates while serving was left out: $(grep '^ *#' "$T/$name.conf")"
	grep -v 'left out' "$T/$name.conf" | grep -Eq "^ *#   ($config_sites)" ||
		fail "$name: no site of the server's configuration code proposed: $(grep '^ *#' "$T/$name.conf")"

	since=@$(date +%s.%6N)
	PMALLOC_CONF=$T/$name.conf LD_PRELOAD=$SHIM $start
	$load || fail "$name: load failed in enforce mode"
	stop_server
	[ "$(kills "$name" "$exe" "$since")" = 0 ] || fail "$name: the proposal killed under the load it was learned from"
	journal_sync
	bytes=$(first_protected "$name" config "$since")
	[ -n "$bytes" ] || fail "$name: the proposal protected nothing"

	# The attack: a write into the configuration value the server keeps.
	since=@$(date +%s.%6N)
	LEARN_INJECT_AFTER=20 LEARN_INJECT_NEEDLE=$(reverse "$needle") PMALLOC_CONF=$T/$name.conf \
		LD_PRELOAD="$INJECT $SHIM" $start 2>"$T/inject"
	$load >/dev/null 2>&1 || true
	stop_server
	journal_sync
	v=$(journalctl --no-pager -o json --since "$since" MESSAGE_ID=$MID_VIOLATION PMALLOC_EXE="$exe" | head -n 1)
	[ -n "$v" ] || fail "$name: the injected write killed nothing: $(grep learn_inject "$T/inject" "$T/ngx/out" 2>/dev/null)"
	printf '%s' "$v" | grep -q "\"PMALLOC_POLICY\":\"$name\"" || fail "$name: policy: $v"
	printf '%s' "$v" | grep -q '"PMALLOC_POOL":"config"' || fail "$name: pool: $v"
	printf '%s' "$v" | grep -q '"PMALLOC_SIGNAL_NAME":"SIGSEGV"' || fail "$name: not killed: $v"
	site=$(printf '%s' "$v" | sed -n 's/.*"PMALLOC_OBJECT_SITE":"\([^"]*+0x[0-9a-f]*\)".*/\1/p')
	[ -n "$site" ] || fail "$name: the violation names no site: $v"
	proposed "$site" "$T/$name.conf" || fail "$name: site $site is not in the proposal"
	wrappers_of "$T/$name.conf" | grep -q "[\":]${site%+0x*}\"\|${site%+0x*}.*:+0x${site##*+0x}\"" &&
		fail "$name: the kept configuration was charged to a wrapper, $site"
	pass "$name: learn, propose ($sites; pool config $learned bytes), enforce under load without a kill (pool config: $bytes bytes of pages read-only at its first trigger), a write into the kept configuration killed in $site"
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
  server { listen 127.0.0.1:$NGX_PORT; server_name Kept-Config-$$.Example; root $T/ngx/html; location / { } }
}
EOC
	ngx_start() {
		/usr/sbin/nginx -p "$T/ngx" -c "$T/ngx/nginx.conf" -e "$T/ngx/logs/error.log" \
			>"$T/ngx/out" 2>&1 &
		SERVER_PID=$!
		wait_until 200 curl -sf -o /dev/null "http://127.0.0.1:$NGX_PORT/" ||
			fail "nginx did not come up: $(cat "$T/ngx/out" "$T/ngx/logs/error.log")"
	}
	# 50 requests, each on a connection of its own (as from 50 clients),
	# made by one curl: a curl per request cost 10 ms each, a tenth of the
	# test.
	ngx_load() {
		local urls=() i
		for i in $(seq 50); do urls+=("http://127.0.0.1:$NGX_PORT/"); done
		curl -sf -m 5 --fail-early -H 'Connection: close' -w '%{num_connects}\n' "${urls[@]}" >"$T/ngx/load" || return 1
		[ "$(grep -cx 1 "$T/ngx/load")" = 50 ] || { echo "ngx_load: not 50 connections: $(tail -n 3 "$T/ngx/load")"; return 1; }
	}
	cycle nginx /usr/sbin/nginx ngx_start ngx_load "$NGX_POOLS" "kept-config-$$.example" 131072 \
		"ngx_init_cycle|ngx_conf_|ngx_http_|nginx\+0x[0-9a-f]+ in ngx_(init_cycle|conf_)"
else
	echo "skipped: nginx not installed"
fi

if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
	RDS_PORT=$((20000 + ($$ + 7) % 20000))
	RDS_PASS=kept-config-$$
	RDS=$(readlink -f "$(command -v redis-server)")
	mkdir -p "$T/rds"
	rds_start() {
		redis-server --port "$RDS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$T/rds" --requirepass "$RDS_PASS" \
			--daemonize no --logfile "$T/rds/log" &
		SERVER_PID=$!
		wait_until 200 redis-cli -p "$RDS_PORT" --no-auth-warning -a "$RDS_PASS" ping ||
			fail "redis did not come up: $(cat "$T/rds/log")"
	}
	rds_load() { redis-benchmark -p "$RDS_PORT" -a "$RDS_PASS" -n 2000 -c 4 -q -t set,get,lpush,incr >/dev/null; }
	cycle redis "$RDS" rds_start rds_load "$RDS_POOLS" "client|no-evict" 16384 \
		"populateCommandTable|initConfigValues|loadServerConfig"
else
	echo "skipped: redis-server not installed"
fi
