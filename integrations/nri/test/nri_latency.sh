#!/bin/sh
# nxq-timeout: 3600
# nri_latency: what nxquota-nri adds to a container's start, against the
# same containerd without it (issue 28: "the plugin's added container-start
# latency (median, p99) against containerd without it").  A benchmark: it
# prints figures and asserts only that each side is what it says.
# NRI_LAT_BLOCKS blocks (default 10) of NRI_LAT_N cycles (default 10) on
# each side, the sides alternating (the first side alternating too), so
# that the machine's drift falls on both: "with", the plugin registered;
# "without", the plugin stopped (containerd's NRI on, no plugin: what a
# node without nxquota runs).  A cycle is nxq-cri cycles' (a pod of one
# container, /kubepods/burstable, the container given the GPU by
# NVIDIA_VISIBLE_DEVICES and annotated max=24Mi, min=8Mi); every cycle
# checks, while its container runs, that the ledger has its budget
# ("with") or has none ("without").  Phases, as the CRI client sees them:
# create (CreateContainer: the plugin's injection), startc
# (StartContainer: its hook run), start (the two: a kubelet's container
# start), rm (RemoveContainer: its poststop), runp and rmp (pods: the
# plugin takes no part).  Under TCG everything is slower than on a node:
# the ratio and the difference are the figures, side by side.
. /containers/lib.sh
need_nxq
. /nri/lib.sh
nri_need
B=${NRI_LAT_BLOCKS:-10} N=${NRI_LAT_N:-10}
ctd_start
dev_register
cdi_spec
: > /tmp/nri.log
C=/run/nxq-lat
rm -rf $C
mkdir -p $C
cat > $C/with.sh <<'CHECK'
. /containers/lib.sh
led
expect_node $NXQ_CYC_CG max $((24 * MiB))
expect_node $NXQ_CYC_CG min $((8 * MiB))
echo ok >> /run/nxq-lat/checked.with
CHECK
cat > $C/without.sh <<'CHECK'
. /containers/lib.sh
led
[ -z "$(led_node $NXQ_CYC_CG max)" ] || fail "$NXQ_CYC_CG has a budget without the plugin"
echo ok >> /run/nxq-lat/checked.without
CHECK
side() {	# side with|without COUNT NAME
	nxq-cri cycles $2 $3 /kubepods/burstable localhost/nxq-app:1 \
		-check-every 1 -check "sh $C/$1.sh" ${4:+-raw $C/raw.$1} \
		-a nxquota.io/max=24Mi -a nxquota.io/min=8Mi -e NVIDIA_VISIBLE_DEVICES=$KEY \
		-- /bin/sleep 100000 > $C/out 2>&1 || fail "$1: $(grep -m1 "nxq-cri:" $C/out; grep -v "nxq-cri:" $C/out | tail -n 20)"
}
plugin_on() { plugin_start /tmp/nri.log; }
plugin_off() {
	kill $NRI_PID
	wait $NRI_PID 2>/dev/null
	NRI_PID=
	# containerd drops the plugin when its connection closes
	sleep 1
}
t1=$(now_cs)
plugin_on
side with 2 warm-with
plugin_off
side without 2 warm-without
rm -f $C/checked.*
i=0
while [ $i -lt $B ]; do
	if [ $((i % 2)) = 0 ]; then
		plugin_on; side with $N w$i raw; plugin_off; side without $N o$i raw
	else
		side without $N o$i raw; plugin_on; side with $N w$i raw; plugin_off
	fi
	i=$((i + 1))
done
info "$B blocks of $N cycles a side in $(since "$t1")"
for s in with without; do
	n=$(grep -c ok $C/checked.$s)
	[ "$n" = $((B * N)) ] || fail "$s: $n cycles checked, expected $((B * N))"
done
# stat SIDE PHASE: "median p99" in ms (nearest rank)
stat() {
	awk -v p=$2 '$1 == p { print $2 }' $C/raw.$1 | sort -n | awk '
		{ v[NR] = $1 } END { r = int((NR * 99 + 99) / 100); printf "%.1f %.1f", v[int(NR / 2) + 1], v[r] }'
}
echo "info: phase    without (median p99 ms)   with (median p99 ms)   added median   ratio"
for ph in start create startc rm runp rmp; do
	set -- $(stat without $ph) $(stat with $ph)
	awk -v ph=$ph -v a=$1 -v b=$2 -v c=$3 -v d=$4 'BEGIN {
		printf "info: %-8s %8.1f %8.1f            %8.1f %8.1f          %+8.1f ms   %.2fx\n",
			ph, a, b, c, d, c - a, c / a }'
done
led
left=$(led_paths | grep -v '^/$' | tr '\n' ' ')
[ -z "$left" ] || { led_show; fail "the ledger ($NXQ_AUTHORITY) still has: $left"; }
stop_all
dev_unregister
exit 0
