#!/bin/sh
# nxquotad's /metrics (-M) scraped by a real Prometheus.
#  - a daemon (daemon/build/nxquotad, or $NXQD_BIN) on a fresh directory,
#    its cgroup2 root (-C) the mount, with two pods in a fresh cgroup T, pa and pb, each
#    with a container c, and hook records (as nxquota-hook writes them,
#    in $NXQUOTA_HOOK_STATE_DIR) naming them team-a/llm-a/vllm and
#    team-b/llm-b/vllm; -M on a free loopback port;
#  - lending: /pa min=2G, /pb min=512M on a 4 GiB device; pb's holder
#    charges 1.5 GiB, so it borrows 1 GiB of pa's unused guarantee; the
#    exposition must say so, labelled, and pass `promtool check metrics`;
#  - Prometheus (a temporary config and data directory, a free loopback
#    port, a 1 s scrape interval) scrapes it; a PromQL query over its
#    HTTP API must return pod llm-b's borrowed bytes, 1073741824, and 0
#    for llm-a;
#  - the recall: pa waits for 3 GiB, pb serves its tickets; the
#    exposition and Prometheus count pb's tickets and released bytes;
#  - the Grafana dashboard (packaging/grafana/nxquota-dashboard.json)
#    parses, every metric it names is in the exposition, and each of its
#    queries is one Prometheus accepts;
#  - a hostile scraper: more idle connections than the endpoint takes
#    and a request read one byte a second, while 200 charges and
#    uncharges go through the daemon in a bounded time; the idle ones
#    are dropped after NXQD_METRICS_TIMEOUT_S and a scrape works again;
#  - -M on a unix socket (0600), and bad addresses refused.
# Needs root, a cgroup2 mount, curl, jq and python3 ("skipped", 77,
# otherwise); without prometheus/promtool, everything but the Prometheus
# part runs and it ends "SKIP: ..." (77).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/tests/tools
tool=${NXQUOTACTL:-$top/tools/nxquotactl}
bin=${NXQD_BIN:-$top/daemon/build/nxquotad}
dash=$top/packaging/grafana/nxquota-dashboard.json
fail() { echo "prom.sh: FAIL: $*"; exit 1; }
skip() { echo "prom.sh: skipped: $*"; exit 77; }

[ "$(id -u)" = 0 ] || skip "needs root"
for c in curl jq python3; do
	command -v $c >/dev/null || skip "no $c"
done
[ -x "$tool" ] || fail "no $tool (make -C tools)"
[ -x "$bin" ] || fail "no $bin (make -C daemon)"
mnt=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)
[ -n "$mnt" ] || skip "no cgroup2 mount"
prom=
command -v prometheus >/dev/null && command -v promtool >/dev/null &&
	prom=y

tmp=$(mktemp -d /tmp/nxq-prom.XXXXXX)
T=nxq-prom.$$
cg=$mnt/$T
pid=
kids=
cleanup() {
	for k in $kids; do kill -9 "$k" 2>/dev/null; done
	[ -z "$pid" ] || kill "$pid" 2>/dev/null
	wait 2>/dev/null
	for d in pa/c pb/c pa pb; do rmdir "$cg/$d" 2>/dev/null; done
	rmdir "$cg" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap '' PIPE	# a holder that died: its fifo's writer fails, and says so
mkdir "$cg" "$cg/pa" "$cg/pb" "$cg/pa/c" "$cg/pb/c" ||
	skip "cannot create cgroups in $mnt"

gcc -O2 -Wall -Werror -I"$top/include/uapi" -I"$top/tests/vm" -pthread \
	-o "$tmp/nxq-hold" "$top/tests/vm/tools/nxq-hold.c" 2>"$tmp/cc.log" ||
	{ cat "$tmp/cc.log"; fail "nxq-hold does not build"; }

# free TCP ports on loopback (bound and closed: another may take one,
# then the daemon or Prometheus says so and the test fails)
ports=$(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))')
mport=${ports% *}
pport=${ports#* }
url=http://127.0.0.1:$mport/metrics

# The hook's records: root's 0700 directory, one record per container.
hooks=$tmp/hooks
mkdir -m 700 "$hooks"
record() {	# record ID CGROUP POD_CGROUP NAMESPACE POD CONTAINER
	cat >"$hooks/$1" <<EOF
{
  "version":1,
  "id":"$1",
  "authority":"nxquotad",
  "control":"$tmp/control.sock",
  "cgroup":"$2",
  "pod_cgroup":"$3",
  "kubernetes":{ "namespace":"$4", "pod":"$5", "container":"$6" },
  "budgets":[ { "device":"$A", "scope":"pod", "cgroup":"$3", "min":$7, "created":true } ]
}
EOF
}
A=GPU-aaaaaaaa-1111-2222-3333-444444444444
record ctr-a /$T/pa/c /$T/pa team-a llm-a vllm 2147483648
record ctr-b /$T/pb/c /$T/pb team-b llm-b vllm 536870912

ctl=$tmp/control.sock
NXQUOTA_HOOK_STATE_DIR=$hooks "$bin" -s "$tmp/client.sock" -c "$ctl" \
	-S "$tmp/state" -C "$mnt" -G 0 -M "127.0.0.1:$mport" -v 2>"$tmp/log" &
pid=$!
i=0
until "$tool" --control "$ctl" devices >/dev/null 2>&1; do
	if ! kill -0 "$pid" 2>/dev/null; then
		grep -q "built without libmicrohttpd" "$tmp/log" &&
			skip "nxquotad was built without libmicrohttpd (libmicrohttpd-dev)"
		cat "$tmp/log"
		fail "the daemon did not start"
	fi
	[ $i -lt 500 ] || { cat "$tmp/log"; fail "the daemon did not start"; }
	sleep 0.01
	i=$((i + 1))
done
"$tool" --control "$ctl" devices register "$A" 4G >/dev/null || fail "register"
"$tool" --control "$ctl" devices default-max "$A" max >/dev/null || fail "default-max"
"$tool" --control "$ctl" set /$T/pa "$A" min=2G >/dev/null || fail "set /pa"
"$tool" --control "$ctl" set /$T/pb "$A" min=512M >/dev/null || fail "set /pb"

# hold NAME CGROUP: a holder with an eventfd; its stdin on descriptor N
nfd=3
hold() {
	mkfifo "$tmp/in.$1"
	NXQ_AUTHORITY=daemon NXQUOTA_SOCKET=$tmp/client.sock NXQ_CGROOT=$mnt \
		"$tmp/nxq-hold" "$1" "$A" "$2" --eventfd <"$tmp/in.$1" \
		>"$tmp/out.$1" 2>&1 &
	kids="$kids $!"
	eval "exec $nfd>\"$tmp/in.$1\""
	nfd=$((nfd + 1))
}
# wait_for FILE TEXT: until a line of FILE has TEXT (5 s)
wait_for() {
	i=0
	until grep -q "$2" "$1" 2>/dev/null; do
		[ $i -lt 500 ] || { cat "$1"; fail "no '$2' in $1"; }
		sleep 0.01
		i=$((i + 1))
	done
}
scrape() {	# scrape FILE: the endpoint's text into FILE, 200 or fail
	code=$(curl -s -o "$1" -w '%{http_code} %{time_total}' --max-time 10 "$url")
	secs=${code#* }
	code=${code%% *}
	[ "$code" = 200 ] || fail "GET /metrics: HTTP $code: $(cat "$1")"
}
has() {	# has FILE TEXT: a line of FILE is exactly TEXT
	grep -qxF -- "$2" "$1" || { grep -F "${2%%\{*}" "$1"; fail "no line '$2'"; }
}

hold b /$T/pb/c	# descriptor 3
hold a /$T/pa/c	# descriptor 4
echo "charge 1536M" >&3
wait_for "$tmp/out.b" "granted"

# ---- the exposition ------------------------------------------------------
scrape "$tmp/m1"
m1_secs=$secs
has "$tmp/m1" "nxquota_budget_borrowed_bytes{device=\"$A\",cgroup=\"/$T/pb\",namespace=\"team-b\",pod=\"llm-b\",device_uuid=\"$A\"} 1073741824"
has "$tmp/m1" "nxquota_budget_borrowed_bytes{device=\"$A\",cgroup=\"/$T/pa\",namespace=\"team-a\",pod=\"llm-a\",device_uuid=\"$A\"} 0"
has "$tmp/m1" "nxquota_budget_current_bytes{device=\"$A\",cgroup=\"/$T/pb/c\",namespace=\"team-b\",pod=\"llm-b\",container=\"vllm\",device_uuid=\"$A\"} 1610612736"
has "$tmp/m1" "nxquota_budget_effective_min_bytes{device=\"$A\",cgroup=\"/$T/pa\",namespace=\"team-a\",pod=\"llm-a\",device_uuid=\"$A\"} 2147483648"
# the root is no pod's: no names, never guessed
has "$tmp/m1" "nxquota_budget_max_bytes{device=\"$A\",cgroup=\"/\",device_uuid=\"$A\"} +Inf"
grep -q '^# TYPE nxquota_budget_tickets_total counter$' "$tmp/m1" ||
	fail "no counter nxquota_budget_tickets_total"
# the same series as nxquotactl metrics prints (one renderer)
NXQUOTA_HOOK_STATE_DIR=$hooks "$tool" --control "$ctl" metrics \
	>"$tmp/tool.txt" 2>"$tmp/tool.err" ||
	fail "nxquotactl metrics: $(cat "$tmp/tool.err")"
has "$tmp/tool.txt" "nxquota_budget_borrowed_bytes{device=\"$A\",cgroup=\"/$T/pb\",namespace=\"team-b\",pod=\"llm-b\",device_uuid=\"$A\"} 1073741824"
grep '^# TYPE' "$tmp/m1" >"$tmp/t1"
grep '^# TYPE' "$tmp/tool.txt" >"$tmp/t2"
cmp -s "$tmp/t1" "$tmp/t2" || { diff "$tmp/t1" "$tmp/t2"; fail "the endpoint's metric set is not nxquotactl's"; }
if [ -n "$prom" ]; then
	promtool check metrics <"$tmp/m1" >"$tmp/lint" 2>&1 ||
		{ cat "$tmp/lint"; fail "promtool check metrics"; }
fi

# ---- HTTP: what else is asked is refused ---------------------------------
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -d x "$url")
[ "$code" = 405 ] || fail "POST /metrics: HTTP $code, want 405"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mport/")
[ "$code" = 404 ] || fail "GET /: HTTP $code, want 404"

# ---- the dashboard -------------------------------------------------------
jq -e '.panels | length > 0' "$dash" >/dev/null || fail "$dash does not parse or has no panels"
jq -r '.. | objects | select(has("expr")) | .expr' "$dash" >"$tmp/exprs"
[ -s "$tmp/exprs" ] || fail "$dash has no queries"
grep -o "nxquota_[a-z0-9_]*" "$dash" | sort -u >"$tmp/dash-metrics"
while read -r m; do
	grep -qx "# TYPE $m [a-z]*" "$tmp/m1" ||
		fail "the dashboard names $m, which the endpoint does not have"
done <"$tmp/dash-metrics"

# ---- Prometheus scrapes it ------------------------------------------------
if [ -n "$prom" ]; then
	cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: nxquotad
    static_configs:
      - targets: ['127.0.0.1:$mport']
EOF
	prometheus --config.file="$tmp/prometheus.yml" \
		--storage.tsdb.path="$tmp/prom-data" \
		--web.listen-address="127.0.0.1:$pport" \
		--log.level=warn >"$tmp/prom.log" 2>&1 &
	kids="$kids $!"
	papi=http://127.0.0.1:$pport/api/v1
	# query PROMQL: the values of the result vector, one per line, sorted
	query() {
		curl -s --max-time 5 "$papi/query" --data-urlencode "query=$1" |
			jq -r 'select(.status == "success") | .data.result[].value[1]' |
			sort
	}
	# until_query PROMQL VALUE: until the query gives VALUE alone (30 s)
	until_query() {
		i=0
		until [ "$(query "$1")" = "$2" ]; do
			[ $i -lt 60 ] || { cat "$tmp/prom.log"; fail "PromQL $1: '$(query "$1")', want $2"; }
			sleep 0.5
			i=$((i + 1))
		done
	}
	# the pod's own node (container=""): pb borrowed 1 GiB, pa nothing
	until_query 'nxquota_budget_borrowed_bytes{namespace="team-b",pod="llm-b",container=""}' 1073741824
	until_query 'nxquota_budget_borrowed_bytes{namespace="team-a",pod="llm-a",container=""}' 0
	until_query 'sum(nxquota_budget_current_bytes{pod="llm-b",container="vllm"})' 1610612736
	# every query of the dashboard is one Prometheus takes
	while read -r e; do
		e=$(printf '%s' "$e" | sed 's/\$__rate_interval/1m/g; s/\$__interval/1m/g; s/\$[a-z_]*/.*/g')
		curl -s --max-time 5 "$papi/query" --data-urlencode "query=$e" |
			jq -e '.status == "success"' >/dev/null ||
			fail "Prometheus refuses the dashboard's query: $e"
	done <"$tmp/exprs"
fi

# ---- the recall: pa needs its guarantee back ------------------------------
echo "serve" >&3
wait_for "$tmp/out.b" "serving tickets"
echo "wait 3G 5000" >&4
wait_for "$tmp/out.a" "granted after"
scrape "$tmp/m2"
tickets=$(sed -n "s/^nxquota_budget_tickets_total{device=\"$A\",cgroup=\"\\/$T\\/pb\",namespace=\"team-b\",pod=\"llm-b\",device_uuid=\"$A\"} //p" "$tmp/m2")
released=$(sed -n "s/^nxquota_budget_released_bytes_total{device=\"$A\",cgroup=\"\\/$T\\/pb\",namespace=\"team-b\",pod=\"llm-b\",device_uuid=\"$A\"} //p" "$tmp/m2")
[ "${tickets:-0}" -ge 1 ] || fail "pb's tickets: '${tickets:-}', want >= 1"
[ "${released:-0}" -ge 536870912 ] || fail "pb's released bytes: '${released:-}', want >= 512 MiB"
if [ -n "$prom" ]; then
	until_query 'sum(nxquota_budget_tickets_total{pod="llm-b",container=""})' "$tickets"
fi

# ---- a hostile scraper does not stall charges -----------------------------
# room for a's charges: the device is full after the recall
echo "uncharge 64M" >&4
wait_for "$tmp/out.a" "uncharge 64 MiB: done"
python3 - "$mport" >"$tmp/hostile.log" 2>&1 <<'EOF' &
import socket, sys, time
port = int(sys.argv[1])
idle = []
for _ in range(12):	# more than the endpoint takes (NXQD_METRICS_CONNS)
    try:
        idle.append(socket.create_connection(("127.0.0.1", port), timeout=2))
    except OSError:
        pass
slow = socket.socket()
slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
try:
    slow.connect(("127.0.0.1", port))
    slow.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
except OSError:
    pass
print("hostile: connected", flush=True)
for _ in range(30):
    try:
        slow.recv(1)
    except OSError:
        pass
    time.sleep(1)
EOF
hpid=$!
kids="$kids $hpid"
wait_for "$tmp/hostile.log" "hostile: connected"
t0=$(date +%s%N)
n=0
while [ $n -lt 100 ]; do
	echo "charge 1M" >&4
	echo "uncharge 1M" >&4
	n=$((n + 1))
done
i=0
until [ "$(grep -c 'uncharge 1.0 MiB: done\|uncharge 1 MiB: done' "$tmp/out.a")" -ge 100 ]; do
	[ $i -lt 1000 ] || { tail -3 "$tmp/out.a"; fail "200 charges did not finish in 10 s beside a hostile scraper"; }
	sleep 0.01
	i=$((i + 1))
done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$(grep -c 'charge 1.0 MiB: granted\|charge 1 MiB: granted' "$tmp/out.a")" -ge 100 ] ||
	{ grep -v granted "$tmp/out.a" | grep -v uncharge | head; fail "charges refused beside a hostile scraper"; }
"$tool" --control "$ctl" status >/dev/null || fail "status beside a hostile scraper"
# the idle connections are dropped: a scrape works again
i=0
until curl -s -o "$tmp/m3" --max-time 2 "$url" && grep -q '^nxquota_device_capacity_bytes' "$tmp/m3"; do
	[ $i -lt 20 ] || fail "no scrape 10 s after the hostile connections (timeout not applied?)"
	sleep 0.5
	i=$((i + 1))
done

# ---- a unix socket; bad addresses ------------------------------------------
for bad in 0 65536 1.2.3:80 "[::1]" localhost:80 rel/path; do
	"$bin" -s "$tmp/bad.sock" -c "$tmp/bad.ctl" -S "$tmp/bad" -C "$cg" \
		-M "$bad" >"$tmp/bad.out" 2>&1 && fail "-M $bad accepted"
	grep -qF "nxquotad: -M $bad: not PORT" "$tmp/bad.out" ||
		fail "-M $bad: $(cat "$tmp/bad.out")"
done
kill "$pid"
wait "$pid" 2>/dev/null
"$bin" -s "$tmp/client.sock" -c "$ctl" -S "$tmp/state" -C "$mnt" -G 0 \
	-M "$tmp/metrics.sock" 2>"$tmp/log2" &
pid=$!
i=0
until curl -s -o "$tmp/m4" --unix-socket "$tmp/metrics.sock" http://x/metrics 2>/dev/null &&
      grep -q "^nxquota_device_capacity_bytes{device=\"$A\"} 4294967296$" "$tmp/m4"; do
	[ $i -lt 500 ] || { cat "$tmp/log2"; fail "no scrape on the unix socket"; }
	sleep 0.01
	i=$((i + 1))
done
[ "$(stat -c %a "$tmp/metrics.sock")" = 600 ] ||
	fail "the unix socket is $(stat -c %a "$tmp/metrics.sock"), want 600"
kill "$pid"
wait "$pid" 2>/dev/null
pid=
[ ! -e "$tmp/metrics.sock" ] || fail "the unix socket left behind"

size=$(wc -c <"$tmp/m1")
msg="labelled series, promtool, dashboard ($(wc -l <"$tmp/dash-metrics") metrics), recall counted, 200 charges in $ms ms beside a hostile scraper, unix socket, bad addresses; a scrape $size bytes in $m1_secs s (curl's time_total)"
if [ -z "$prom" ]; then
	echo "prom.sh: ok ($msg)"
	echo "prom.sh: SKIP: no prometheus/promtool (apt-get install prometheus): the Prometheus scrape and promtool check not run"
	exit 77
fi
echo "prom.sh: ok (Prometheus scraped it: PromQL gives llm-b's borrowed bytes; $msg)"
