#!/bin/bash
# scripts/demo-gpu.sh - the nxquota story on a real GPU, with nxquotad as the
# authority (no module needed): `make demo-gpu`.  With --figures DIR, the
# three figures of issue 11 instead (`make -C bench gpu-story OUT=DIR`).
#
#   scripts/demo-gpu.sh [--out DIR]        the story; DIR default build/demo-gpu
#   scripts/demo-gpu.sh --figures DIR      figures (a), (b), (c) into DIR
#   scripts/demo-gpu.sh --prebuild         build nxquotad, nxquotactl (libnl
#                                          and json-c linked statically) and the bench
#                                          programs into build/demo-gpu-bin,
#                                          to carry where they cannot build
#
# Needs root (cgroups under the cgroup2 root) and a CUDA GPU; without a GPU
# it prints "skipped: ..." and exits 0.  NXQ_FAKE_CUDA=1 runs everything on
# tests/fakecuda (host memory behind the CUDA driver API) so that it can be
# developed and checked anywhere; its timings mean nothing.
#
# The story: one GPU registered with nxquotad with a capacity CAP; two
# cgroups, an inference-like holder with a guaranteed min and a
# training-like borrower.  Training grows into the memory inference leaves
# idle; inference arrives and asks for its pool; training gets a ticket, its
# libnxquota unmaps and releases real granules (cuMemUnmap/cuMemRelease),
# and inference's waiting charge is granted.  Each step is checked against
# the authority (nxquotactl status) and printed; an unexpected outcome is
# printed as UNEXPECTED and makes the script fail.  Writes DIR/charge.csv
# (t_ms,event,group,current_bytes,detail: the columns of make demo's CSV;
# current_bytes is each tenant's charge as its library sampled it, every
# change and every 100 ms: one holder per cgroup, so its node's current,
# which the steps check against nxquotactl status)
# and DIR/charge.png (gnuplot) or DIR/charge.svg (no gnuplot: drawn by
# bench/csv2svg.awk).
#
# Environment: NXQ_DEMO_CAP (the capacity registered, default 8G on a GPU,
# 128M on the fake), NXQ_DEMO_CHUNK (training's allocation unit, CAP/32),
# NXQ_FIG_SECONDS (figure (c)'s run per mode, default 30), NXQ_FIG_ROUNDS
# (figure (a)'s rounds per size, default 200), NXQ_FIG_SIZES (default
# 2M,64M,1G), NXQ_FIG_FILL (figure (a)'s device, default 4G), GNUPLOT
# (default gnuplot; empty: SVG charts by bench/csv2svg.awk even with gnuplot).
set -u

TOP=$(cd "$(dirname "$0")/.." && pwd)
MODE=story
OUT=$TOP/build/demo-gpu
while [ $# -gt 0 ]; do
	case "$1" in
	--out) OUT=$2; shift 2 ;;
	--figures) MODE=figures; OUT=$2; shift 2 ;;
	--prebuild) MODE=prebuild; OUT=$TOP/build; shift ;;
	*) echo "usage: $0 [--out DIR] | --figures DIR" >&2; exit 2 ;;
	esac
done
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)

J=-j$(nproc 2>/dev/null || echo 1)
GNUPLOT=${GNUPLOT-gnuplot}	# GNUPLOT= draws SVG with bench/csv2svg.awk
rc=0
say() { echo; echo "== $*"; }
unexpected() { echo "UNEXPECTED: $*"; rc=1; }
mib() { echo "$(( $1 / 1048576 )) MiB"; }
size() {	# "8G" -> bytes
	case "$1" in
	*G) echo $(( ${1%G} * 1073741824 )) ;;
	*M) echo $(( ${1%M} * 1048576 )) ;;
	*K) echo $(( ${1%K} * 1024 )) ;;
	*) echo "$1" ;;
	esac
}

# ---- the driver: a GPU, or the fake one ----------------------------------
FAKE=${NXQ_FAKE_CUDA:-}
if [ -n "$FAKE" ]; then
	make -s $J -C "$TOP/tests/fakecuda" >/dev/null || exit 1
	export LD_LIBRARY_PATH=$TOP/tests/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export NXQ_FAKE_CUDA=1
fi

# Binaries built elsewhere (scripts/demo-gpu.sh --prebuild, on a machine
# with libnl's and json-c's headers) are used where a build here fails: the
# GPU machine may lack libnl-genl-3's or json-c's headers and cannot
# install them.
BIN=$TOP/build/demo-gpu-bin
pick() {	# name built-path: the built one, else the carried one
	if [ -x "$2" ]; then echo "$2"
	elif [ -x "$BIN/$1" ]; then echo "   $1: not built here, using $BIN/$1" >&2; echo "$BIN/$1"
	else echo "demo-gpu: $1 does not build and $BIN/$1 is absent" >&2; exit 1; fi
}
if [ "$MODE" = prebuild ]; then
	mkdir -p "$BIN" || exit 1
	make -s $J -C "$TOP/bench" || exit 1
	cp "$TOP/bench/gpu_tenant" "$TOP/bench/gpu_press" "$BIN/"
	# libnl linked statically, the C library dynamically (devices sync dlopens libcuda)
	nl="-Wl,-Bstatic -lnl-genl-3 -lnl-3 -Wl,-Bdynamic"
	# METRICS= : no /metrics (libmicrohttpd, json-c, libnl-genl dynamic), which
	# the GPU machine may lack; the story and gpu.sh do not scrape
	make -s $J -C "$TOP/daemon" B="$BIN/daemon" SAN= METRICS= NL_LIBS="$nl" "$BIN/daemon/nxquotad" || exit 1
	cp "$BIN/daemon/nxquotad" "$BIN/"
	# tools/Makefile's nxquotactl rule, with libnl and json-c static; the
	# tree's own nxquotactl is built again by the next make -C tools
	make -s $J -C "$TOP/tools" -B NL_LIBS="$nl -pthread" \
		CTL_JSON_LIBS="-Wl,-Bstatic -ljson-c -Wl,-Bdynamic" nxquotactl || exit 1
	mv "$TOP/tools/nxquotactl" "$BIN/nxquotactl" || exit 1
	ls -l "$BIN"
	echo "demo-gpu: carry build/demo-gpu-bin to the GPU machine"
	exit 0
fi

# What this machine offers (printed, so that one run tells what is missing).
echo "== this machine: $(uname -sr); cgroup2: $(awk '$0 ~ / - cgroup2 / { print $5; exit }' \
	/proc/self/mountinfo | grep . || echo none); libnl-genl-3 headers: $(
	[ -f /usr/include/libnl3/netlink/genl/genl.h ] && echo yes || echo no); json-c headers: $(
	[ -f /usr/include/json-c/json.h ] && echo yes || echo no); gnuplot: $(
	command -v gnuplot >/dev/null && echo yes || echo no); pidfd_open: $(
	python3 -c 'import os; os.close(os.pidfd_open(os.getpid())); print("yes")' 2>/dev/null ||
	echo "no (or no python3)")"
echo "== build: the library, bench/gpu_tenant and bench/gpu_press"
t=$TOP/bench/gpu_tenant; p=$TOP/bench/gpu_press
nice make -s $J -C "$TOP/bench" >/dev/null 2>"$OUT/build.log" ||
	{ t=/nonexistent; p=/nonexistent; tail -5 "$OUT/build.log"; }
TENANT=$(pick gpu_tenant "$t") || exit 1
PRESS=$(pick gpu_press "$p") || exit 1
probe=$("$TENANT" --probe 2>&1)
case "$probe" in
key\ *) ;;
skipped*) echo "demo-gpu: $probe"; exit 0 ;;
*) echo "demo-gpu: skipped: no GPU ($probe)"; exit 0 ;;
esac
KEY=$(echo "$probe" | awk '{ print $2 }')
TOTAL=$(echo "$probe" | awk '{ print $4 }')
FREE=$(echo "$probe" | awk '{ print $6 }')
if [ "$(id -u)" != 0 ]; then
	echo "demo-gpu: skipped: needs root (cgroups under the cgroup2 root)"
	exit 0
fi
CGROOT=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)
if [ -z "$CGROOT" ]; then
	# cgroup v1 only: mount the v2 hierarchy (empty of controllers) where
	# nxquotad and the tenants find it, the first cgroup2 in mountinfo
	mkdir -p /run/nxq-demo-gpu-cgroup2 &&
		mount -t cgroup2 cgroup2 /run/nxq-demo-gpu-cgroup2 &&
		echo "   (no cgroup2 was mounted: mounted one at /run/nxq-demo-gpu-cgroup2)"
	CGROOT=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)
fi
[ -n "$CGROOT" ] || { echo "demo-gpu: no cgroup2 mount, and none could be mounted"; exit 1; }

echo "== build: nxquotad and nxquotactl"
# The daemon without sanitizers (SAN=): the figures time it.
DBUILD=$TOP/build/nxquotad-demo
d=$DBUILD/nxquotad; c=$TOP/tools/nxquotactl
nice make -s $J -C "$TOP/daemon" B="$DBUILD" SAN= "$DBUILD/nxquotad" >/dev/null 2>>"$OUT/build.log" ||
	{ d=/nonexistent; tail -5 "$OUT/build.log"; }
nice make -s $J -C "$TOP/tools" >/dev/null 2>>"$OUT/build.log" || { c=/nonexistent; tail -5 "$OUT/build.log"; }
NXQD=$(pick nxquotad "$d") || exit 1
CTL=$(pick nxquotactl "$c") || exit 1

# ---- nxquotad on a temporary socket directory ------------------------------
RUN=$(mktemp -d /tmp/nxq-demo-gpu.XXXXXX)
DPID=
PIDS=
CGS=
cleanup() {
	st=$?
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	for p in $PIDS; do wait "$p" 2>/dev/null; done
	[ -n "$DPID" ] && { kill "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; }
	for c in $CGS; do rmdir "$CGROOT$c" 2>/dev/null; done
	if [ "$st" != 0 ] && [ -s "$RUN/nxquotad.log" ]; then
		echo "== the end of nxquotad's log:"
		tail -n 20 "$RUN/nxquotad.log"
	fi
	rm -rf "$RUN"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

export NXQUOTA_SOCKET=$RUN/nxquota.sock
export NXQUOTA_CONTROL=$RUN/control.sock

start_daemon() {
	mkdir -p "$RUN/state"
	"$NXQD" -s "$NXQUOTA_SOCKET" -c "$NXQUOTA_CONTROL" -S "$RUN/state" -C "$CGROOT" \
		> "$RUN/nxquotad.log" 2>&1 &
	DPID=$!
	for _ in $(seq 100); do
		[ -S "$NXQUOTA_SOCKET" ] && [ -S "$NXQUOTA_CONTROL" ] && return 0
		kill -0 "$DPID" 2>/dev/null || break
		sleep 0.1
	done
	echo "demo-gpu: nxquotad did not start:"; cat "$RUN/nxquotad.log"
	exit 1
}
stop_daemon() {
	kill "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; DPID=
}

# devices sync registers each GPU with its device node's MAJOR:MINOR (the
# daemon then takes holders only with an open /dev/nvidiaN); the fake driver
# has no node: registered by key alone.
register_gpu() {
	if [ -n "$FAKE" ]; then
		ctl devices register "$KEY" "$TOTAL"
	else
		ctl devices sync
	fi
}
ctl() {		# show and run an nxquotactl command
	echo "\$ nxquotactl $*"
	"$CTL" "$@" || unexpected "nxquotactl $* failed"
}
# A field of the authority's JSON for a budget path (or the device: "").
jget() {	# path field
	"$CTL" --json status "$KEY" | tr '{' '\n' |
		if [ -n "$1" ]; then grep "\"path\":\"$1\""; else grep "\"key\":\"$KEY\""; fi |
		sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p" | head -1
}
check() {	# path field expected
	v=$(jget "$1" "$2")
	printf '   %-42s %14s  (%s)\n' "${1:-$KEY}" "$2=$v" "$(mib "${v:-0}")"
	[ "$v" = "$3" ] || unexpected "expected $2 = $3 ($(mib "$3"))"
}
mkcg() {
	mkdir -p "$CGROOT$1" || exit 1
	CGS="$1 $CGS"
}

# ---- tenants: gpu_tenant processes fed through FIFOs -----------------------
tenant() {	# name cgroup options...
	n=$1; cg=$2; shift 2
	mkfifo "$RUN/$n.in"
	"$TENANT" "$n" --cgroup "$cg" --log "$RUN/$n.csv" "$@" \
		< "$RUN/$n.in" > "$RUN/$n.out" 2> "$RUN/$n.err" &
	eval "pid_$n=$!"
	PIDS="$PIDS $!"
	eval "exec {fd_$n}>$RUN/$n.in"
	wait_reply "$n" 1 "ready" || exit 1
}
# Wait for the n-th "= " line of a tenant; check it contains a word.
wait_reply() {	# name n expected
	for _ in $(seq 1200); do
		line=$(grep '^= ' "$RUN/$1.out" 2>/dev/null | sed -n "$2p")
		[ -n "$line" ] && break
		if ! kill -0 "$(eval echo "\$pid_$1")" 2>/dev/null; then
			line=$(grep '^= ' "$RUN/$1.out" | sed -n "$2p")
			break
		fi
		sleep 0.1
	done
	echo "   [$1] ${line#= }"
	case "$line" in
	*"$3"*) return 0 ;;
	esac
	unexpected "[$1] expected \"$3\""
	sed 's/^/   [stderr] /' "$RUN/$1.err"
	return 1
}
ask() {		# name command expected
	eval "fd=\$fd_$1"
	cnt=$(grep -c '^= ' "$RUN/$1.out")
	echo "   [$1] < $2"
	echo "$2" >&"$fd"
	wait_reply "$1" $((cnt + 1)) "$3"
}
quit() {	# name
	ask "$1" quit bye
	eval "wait \$pid_$1"
	eval "exec {fd_$1}>&-"
}

echo "   device 0: $KEY, $(mib "$TOTAL") ($(mib "$FREE") free)${FAKE:+ (fake driver)}"
echo "   cgroup2 at $CGROOT; nxquotad: $NXQD (sockets in $RUN)"

# ============================================================================
if [ "$MODE" = story ]; then
	if [ -n "$FAKE" ]; then CAP=$(size "${NXQ_DEMO_CAP:-128M}")
	else CAP=$(size "${NXQ_DEMO_CAP:-8G}"); fi
	CHUNK=$(size "${NXQ_DEMO_CHUNK:-$((CAP / 32))}")
	[ "$CAP" -le "$FREE" ] || { echo "demo-gpu: NXQ_DEMO_CAP $(mib "$CAP") > free $(mib "$FREE")"; exit 1; }
	GMIN=$((CAP * 5 / 8))	# inference's guarantee
	TGROW=$((CAP * 7 / 8))	# what training grows to
	IPOOL=$GMIN		# inference's pool
	I=/nxqgpu-inference
	T=/nxqgpu-training

	echo "nxquota GPU demo: per-cgroup GPU-memory budgets, nxquotad as the authority"
	echo "(bytes are charge: what holders asked nxquotad for; the memory is real"
	echo " CUDA memory, mapped by libnxquota with cuMemCreate/cuMemMap)"

	say "Start nxquotad (no kernel module on this machine)"
	start_daemon
	echo "\$ nxquotad -s $NXQUOTA_SOCKET -c $NXQUOTA_CONTROL -S $RUN/state -C $CGROOT &"

	say "Register the GPU with a capacity of $(mib "$CAP") (root, over the control socket)"
	register_gpu
	ctl devices capacity "$KEY" "$CAP"
	[ $rc = 0 ] || { echo "demo-gpu: cannot register the GPU"; exit 1; }
	check "" capacity "$CAP"
	check "" used 0

	say "Two containers: inference (guaranteed $(mib "$GMIN"), max $(mib "$CAP")), training (no guarantee, max $(mib "$CAP"))"
	mkcg $I
	mkcg $T
	ctl set $I "$KEY" max="$CAP" min="$GMIN"
	ctl set $T "$KEY" max="$CAP"
	check $I min "$GMIN"
	check $I current 0
	[ $rc = 0 ] || { echo "demo-gpu: cannot set the budgets"; exit 1; }

	say "Training starts and grows to $(mib "$TGROW"): inference's idle guarantee is lent"
	tenant training $T --chunk "$CHUNK" --reclaim
	ask training "grow $TGROW" "granted"
	check $T current "$TGROW"
	check $T borrowed "$TGROW"
	check "" used "$TGROW"
	echo "   ... $(mib $((TGROW - (CAP - GMIN)))) of training's $(mib "$TGROW") are inference's unused guarantee."

	say "Inference arrives and asks for its $(mib "$IPOOL") pool; $(mib $((CAP - TGROW))) are free: it waits"
	tenant inference $I --wait-ms 10000
	ask inference "pool $IPOOL" "granted"
	WANT=$((IPOOL - (CAP - TGROW)))
	echo "   timeline (nxquotad asks training for the $(mib "$WANT") missing; training's"
	echo "   libnxquota frees its cache, unmaps and releases the granules; the grant follows):"
	cat "$RUN/training.out" "$RUN/inference.out" | grep '^@' | sed 's/^@//' | sort -n |
		awk 'NR == 1 { t0 = $1 } { t = $1; $1 = ""; printf "   %+10.3f ms%s\n", (t - t0) / 1000, $0 }'
	grep -q "ticket .*asked $((WANT / 1048576)) MiB (reason DEVICE, level RECALL)" "$RUN/training.out" ||
		unexpected "training was not asked for $(mib "$WANT") (RECALL)"
	grep -q "answered ticket .*released $((WANT / 1048576)) MiB" "$RUN/training.out" ||
		unexpected "training did not answer with $(mib "$WANT") released"
	check $I current "$IPOOL"
	check $I borrowed 0
	check $T current $((TGROW - WANT))
	check "" used "$CAP"
	ask training status "status"

	say "Training wants more: the device is full and inference is within its guarantee"
	ask training "grow $CHUNK" "refused ENOSPC"
	check $T current $((TGROW - WANT))

	say "Inference finishes; training grows back into the memory it left"
	ask inference "free $IPOOL" "freed"
	check $I current 0
	ask training "grow $WANT" "granted"
	check $T current "$TGROW"
	quit inference
	quit training
	check "" used 0

	say "Figures of this run (nxquotactl status)"
	"$CTL" status "$KEY" | sed 's/^/   /'
	stop_daemon

	# The CSV: samples of each tenant's charge and events, one clock.
	{
		echo "t_ms,event,group,current_bytes,detail"
		cat "$RUN/training.csv" "$RUN/inference.csv" | sort -t, -k1,1n -s | awk -F, '
			NR == 1 { t0 = $1 }
			{ printf "%.3f,%s,%s,%s,%s\n", ($1 - t0) / 1000, $2, $3, $4, $5 }'
	} > "$OUT/charge.csv"
	echo
	echo "   each group's charge over time: $(grep -c ,sample, "$OUT/charge.csv") samples,"
	echo "   $(grep -vc -e ,sample, -e ^t_ms "$OUT/charge.csv") events: $OUT/charge.csv"
	if [ -n "$GNUPLOT" ] && command -v "$GNUPLOT" >/dev/null; then
		"$GNUPLOT" -e "csv='$OUT/charge.csv'; png='$OUT/charge.png'; ymax=$((CAP * 11 / 10 / 1048576))" \
			"$TOP/bench/demo-gpu-chart.gp" && echo "   chart: $OUT/charge.png" ||
			unexpected "gnuplot failed"
	else
		awk -F, -v title="nxquota GPU demo: each cgroup's charge over time" \
			-f "$TOP/bench/csv2svg.awk" "$OUT/charge.csv" > "$OUT/charge.svg" &&
			echo "   chart: $OUT/charge.svg (no gnuplot: drawn by bench/csv2svg.awk)"
	fi
	echo
	if [ $rc = 0 ]; then echo "demo-gpu: every step behaved as shown"
	else echo "demo-gpu: UNEXPECTED results above"; fi
	exit $rc
fi

# ============================================================================
# --figures DIR
exec > >(tee "$OUT/figures.txt") 2>&1
echo "nxquota GPU figures, $(date -u +%FT%TZ), device 0 $KEY ($(mib "$TOTAL"))${FAKE:+, FAKE DRIVER: timings mean nothing}"
uname -r
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

start_daemon
register_gpu >/dev/null
[ $rc = 0 ] || { echo "demo-gpu: cannot register the GPU"; exit 1; }

# (a) and (b): gpu_press
if [ -n "$FAKE" ]; then FILL=$(size "${NXQ_FIG_FILL:-64M}"); SIZES=${NXQ_FIG_SIZES:-2M,16M}
	ROUNDS=${NXQ_FIG_ROUNDS:-20}; NULLS=2000
else FILL=$(size "${NXQ_FIG_FILL:-4G}"); SIZES=${NXQ_FIG_SIZES:-2M,64M,1G}
	ROUNDS=${NXQ_FIG_ROUNDS:-200}; NULLS=20000; fi
W=/nxqgpu-fig-w
H=/nxqgpu-fig-h
mkcg $W
mkcg $H
"$CTL" devices capacity "$KEY" "$FILL" || unexpected "capacity"
"$CTL" set $W "$KEY" max="$FILL" || unexpected "budget $W"
"$CTL" set $H "$KEY" max="$FILL" || unexpected "budget $H"
echo
echo "== (a) the GPU pressure round trip and (b) a charge over the socket"
echo "\$ gpu_press --fill $FILL --sizes $SIZES --rounds $ROUNDS --nulls $NULLS --cg-w $W --cg-h $H"
"$PRESS" --fill "$FILL" --sizes "$SIZES" --rounds "$ROUNDS" --nulls "$NULLS" \
	--cg-w $W --cg-h $H || unexpected "gpu_press failed"

# (c) idle-reserved memory: a static split against nxquota with lending
if [ -n "$FAKE" ]; then CAP=$(size "${NXQ_DEMO_CAP:-128M}"); SECS=${NXQ_FIG_SECONDS:-12}; TICK=100
else CAP=$(size "${NXQ_DEMO_CAP:-8G}"); SECS=${NXQ_FIG_SECONDS:-30}; TICK=50; fi
CHUNK=$((CAP / 64))
I=/nxqgpu-fig-inference
T=/nxqgpu-fig-training
mkcg $I
mkcg $T
echo
echo "== (c) idle-reserved memory: static split vs nxquota, ${SECS} s each, capacity $(mib "$CAP")"
plan() {	# mode
	# both start on the same CLOCK_MONOTONIC tick, 5 s from now (CUDA set up)
	t0=$(( $("$TENANT" --now) + 5000000 ))
	if [ "$1" = static ]; then
		io="--unmanaged $((CAP / 2))"; to="--unmanaged $((CAP / 2))"
	else
		io="--wait-ms 5000"; to="--reclaim"
	fi
	# shellcheck disable=SC2086
	"$TENANT" inference --cgroup $I --plan inference --cap "$CAP" \
		--chunk "$CHUNK" --tick-ms $TICK --duration-ms $((SECS * 1000)) \
		--start-us "$t0" --samples "$RUN/$1-inference.csv" $io > "$RUN/$1-inference.out" 2>&1 &
	p1=$!
	# shellcheck disable=SC2086
	"$TENANT" training --cgroup $T --plan training --cap "$CAP" \
		--chunk "$CHUNK" --tick-ms $TICK --duration-ms $((SECS * 1000)) \
		--start-us "$t0" --samples "$RUN/$1-training.csv" $to > "$RUN/$1-training.out" 2>&1 &
	p2=$!
	wait $p1 || { unexpected "$1 inference failed"; cat "$RUN/$1-inference.out"; }
	wait $p2 || { unexpected "$1 training failed"; cat "$RUN/$1-training.out"; }
	grep -h "run late" "$RUN/$1-inference.out" "$RUN/$1-training.out" | sed 's/^/   /'
}
"$CTL" devices capacity "$KEY" "$CAP" || unexpected "capacity"
"$CTL" set $I "$KEY" max="$CAP" min=$((CAP / 2)) || unexpected "budget $I"
"$CTL" set $T "$KEY" max="$CAP" || unexpected "budget $T"
plan static
plan nxquota
# Per tick: both tenants' rows joined; reserved = the split's share (static)
# or the charge (nxquota: the rest of the device is anyone's).
{
	echo "t_ms,mode,idle_reserved,unmet,in_use,stranded"
	for m in static nxquota; do
		cat "$RUN/$m-inference.csv" "$RUN/$m-training.csv" | grep -v '^tick' |
		awk -F, -v m=$m -v cap="$CAP" '
			{ k = $1; t[k] = $2; n[k]++; dem[k] += $4; use[k] += $5
			  res[k] += (m == "static" ? cap / 2 : $7); un[k] += $8 }
			END { for (k in n) if (n[k] == 2) {
				idle = res[k] - use[k]; st = idle < un[k] ? idle : un[k]
				printf "%.0f,%s,%.0f,%.0f,%.0f,%.0f\n", t[k], m, idle, un[k], use[k], st } }' |
		sort -t, -k1,1n
	done
} > "$OUT/idle.csv"
echo
printf '   %-8s %16s %16s %16s %16s   (means over the run, %% of the capacity)\n' \
	mode "idle-reserved" "unmet demand" "stranded" "in use"
for m in static nxquota; do
	awk -F, -v m=$m -v cap="$CAP" '$2 == m { n++; i += $3; u += $4; s += $6; w += $5 }
		END { printf "   %-8s %15.1f%% %15.1f%% %15.1f%% %15.1f%%\n", m, 100 * i / n / cap,
			100 * u / n / cap, 100 * s / n / cap, 100 * w / n / cap }' "$OUT/idle.csv"
done
for m in static nxquota; do
	awk -F, -v m=$m -v cap="$CAP" '$2 == m { n++; i += $3; u += $4; s += $6; w += $5 }
		END { printf "BENCH gpu_idle mode=%s ticks=%d idle_reserved_pct=%.1f unmet_pct=%.1f " \
			"stranded_pct=%.1f in_use_pct=%.1f\n", m, n, 100 * i / n / cap,
			100 * u / n / cap, 100 * s / n / cap, 100 * w / n / cap }' "$OUT/idle.csv"
done
awk -F, '$2 == "static" { s += $3; n++ } $2 == "nxquota" { x += $3; m++ }
	END { if (n && m && x > 0) printf "BENCH gpu_idle ratio idle_reserved static/nxquota=%.1f (means)\n", (s / n) / (x / m);
	      else if (n && m) printf "BENCH gpu_idle ratio idle_reserved static/nxquota=inf (nxquota: none idle)\n" }' "$OUT/idle.csv"
# What lending must show: training above its half at some tick under
# nxquota, never under the split; less memory stranded than the split.
tmax() { awk -F, 'NR > 1 && $5 > m { m = $5 } END { printf "%.0f\n", m }' "$1"; }
hs=$(tmax "$RUN/static-training.csv"); hn=$(tmax "$RUN/nxquota-training.csv")
echo "   training's largest use: static $(mib "${hs:-0}"), nxquota $(mib "${hn:-0}") (half: $(mib $((CAP / 2))))"
[ "${hs:-0}" -le $((CAP / 2)) ] || unexpected "training used more than its half under the static split"
[ "${hn:-0}" -gt $((CAP / 2)) ] || unexpected "training never borrowed beyond its half under nxquota"
awk -F, '$2 == "static" { s += $6; n++ } $2 == "nxquota" { x += $6; m++ }
	END { exit !(n && m && x / m < s / n) }' "$OUT/idle.csv" ||
	unexpected "nxquota left as much memory stranded as the static split"
cp "$RUN"/static-*.csv "$RUN"/nxquota-*.csv "$RUN"/static-*.out "$RUN"/nxquota-*.out "$OUT/" 2>/dev/null
if [ -n "$GNUPLOT" ] && command -v "$GNUPLOT" >/dev/null; then
	"$GNUPLOT" -e "csv='$OUT/idle.csv'; png='$OUT/idle.png'; cap=$CAP" "$TOP/bench/idle-chart.gp" &&
		echo "   chart: $OUT/idle.png" || unexpected "gnuplot failed"
else
	awk -F, -v title="device memory reserved but idle: static split vs nxquota" -v mode=idle \
		-f "$TOP/bench/csv2svg.awk" "$OUT/idle.csv" > "$OUT/idle.svg" &&
		echo "   chart: $OUT/idle.svg (no gnuplot: drawn by bench/csv2svg.awk)"
fi
stop_daemon
echo
echo "figures: $OUT/figures.txt, $OUT/idle.csv${FAKE:+ (fake driver: timings mean nothing)}"
exit $rc
