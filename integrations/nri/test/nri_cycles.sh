#!/bin/sh
# nxq-timeout: 10000
# nri_cycles: 1,000 pods made and removed one after the other through
# containerd 1.7 with NRI, as a kubelet would (nxq-cri cycles), each with
# one container given the GPU and annotated nxquota.io/max=24Mi, min=8Mi,
# pod-max=32Mi, pod-min=16Mi, budgeted by nxquota-nri (issue 28, item 4:
# "0 budgets left after 1,000 pod create/delete cycles").  Each cycle:
# RunPodSandbox (/kubepods/burstable/pod<uid>), CreateContainer,
# StartContainer, StopContainer, RemoveContainer, StopPodSandbox,
# RemovePodSandbox, the pod's cgroup removed as kubelet does.  Every 25th
# cycle, while the container runs, the ledger has its four budgets and
# nxquota-hook its record.  At the end: no node but the root's, no
# holder, no record, no kubepods cgroup left; the plugin's and the
# authority's open descriptors as many as after the first cycles (a leak
# of one a cycle is 1,000).  Cycles: NRI_CYCLES (integrations/nri/test/
# run.sh sets it from NXQ_NRI_CYCLES, default 1000); make check-nri-long
# runs it.
. /containers/lib.sh
need_nxq
. /nri/lib.sh
nri_need
N=${NRI_CYCLES:-1000}
ctd_start
dev_register
cdi_spec
: > /tmp/nri.log
plugin_start /tmp/nri.log

C=/run/nxq-cyc
mkdir -p $C
cat > $C/check.sh <<'CHECK'
. /containers/lib.sh
led
expect_node $NXQ_CYC_CG max $((24 * MiB))
expect_node $NXQ_CYC_CG min $((8 * MiB))
expect_node ${NXQ_CYC_CG%/*} max $((32 * MiB))
expect_node ${NXQ_CYC_CG%/*} min $((16 * MiB))
[ -f "$(rec_file $NXQ_CYC_CTR)" ] || fail "no record of $NXQ_CYC_CTR"
echo ok >> /run/nxq-cyc/checked
CHECK
# the authority: nxquotad's pid, or none (the module)
apid() { [ "$NXQ_AUTHORITY" != daemon ] || nxqd_pid; }
nfds() { ls /proc/$1/fd 2>/dev/null | wc -l; }
cycle() {	# cycle COUNT NAME: COUNT cycles, checked every 25th
	nxq-cri cycles $1 $2 /kubepods/burstable localhost/nxq-app:1 \
		-check-every 25 -check "sh $C/check.sh" -raw $C/raw \
		-a nxquota.io/max=24Mi -a nxquota.io/min=8Mi -a nxquota.io/pod-max=32Mi \
		-a nxquota.io/pod-min=16Mi -e NVIDIA_VISIBLE_DEVICES=$KEY \
		-- /bin/sleep 100000 > $C/out 2>&1 || fail "$(grep -m1 "nxq-cri:" $C/out; grep -v "nxq-cri:" $C/out | tail -n 20)"
}
t1=$(now_cs)
cycle 10 warm
p=$NRI_PID a=$(apid)
pf0=$(nfds $p) af0=${a:+$(nfds $a)}
info "10 cycles in $(since "$t1"); the plugin has $pf0 descriptors open${a:+, nxquotad $af0}"
t1=$(now_cs)
cycle $((N - 10)) cyc
sed 's/^/info: /' $C/out
pf1=$(nfds $p) af1=${a:+$(nfds $a)}
info "$N cycles in all, the last $((N - 10)) in $(since "$t1"); the plugin has $pf1 descriptors open${a:+, nxquotad $af1}"
kill -0 $p 2>/dev/null || fail "the plugin is gone"
checked=$(grep -c ok $C/checked)
[ "$checked" = $(((10 + 24) / 25 + (N - 10 + 24) / 25)) ] || fail "$checked checks passed, expected one every 25 cycles"
led
left=$(led_paths | grep -v '^/$' | tr '\n' ' ')
[ -z "$left" ] || { led_show; fail "after $N cycles the ledger ($NXQ_AUTHORITY) still has: $left"; }
[ "$(led_nholders)" = 0 ] || fail "after $N cycles, holders are left"
left=$(ls /run/nxquota/hooks 2>/dev/null | tr '\n' ' ')
[ -z "$left" ] || fail "after $N cycles, records are left: $left"
left=$(find $CG/kubepods -mindepth 2 -type d 2>/dev/null | tr '\n' ' ')
[ -z "$left" ] || fail "after $N cycles, cgroups are left: $left"
[ $pf1 -le $((pf0 + 8)) ] || fail "the plugin's descriptors grew from $pf0 to $pf1 in $((N - 10)) cycles"
[ -z "$a" ] || [ $af1 -le $((af0 + 8)) ] || fail "nxquotad's descriptors grew from $af0 to $af1 in $((N - 10)) cycles"
n=$(grep -c 'createRuntime .*: ok in' /tmp/nri.log)
[ "$n" = $N ] || fail "the plugin set budgets $n times in $N cycles"
info "$N pods made and removed, $checked checked while running: no node, holder, record or cgroup left"
stop_all
dev_unregister
exit 0
