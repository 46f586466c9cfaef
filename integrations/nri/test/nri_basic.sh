#!/bin/sh
# nri_basic: containerd 1.7 (Debian trixie's) with NRI enabled, driven as
# a kubelet would by nxq-cri (the CRI over gRPC), with nxquota-nri
# connected to its NRI socket (issue 28, item 1; integrations/nri/test/run.sh
# runs it, make check's stage nri too).
#  - a pod (cgroupfs layout: /kubepods/burstable/pod<uid>/<sandbox id>,
#    the pause image built locally, host network) and a container of it
#    annotated nxquota.io/max=24Mi, min=8Mi, pod-max=32Mi, pod-min=16Mi,
#    given the GPU by NVIDIA_VISIBLE_DEVICES=<KEY> (registered without a
#    node): when the container's process runs, the ledger has max 24Mi,
#    min 8Mi on its cgroup and 32Mi/16Mi on the pod's -- set by the
#    plugin's StartContainer, before the process's first instruction;
#  - a container asking min above max is refused: StartContainer fails
#    with nxquota-hook's reason, and nothing is set;
#  - a pod annotated as Kubernetes annotates one (RunPodSandbox's
#    annotations, none on its containers): its containers get the pod's
#    nxquota.io/ budgets, a container's own annotation winning;
#  - RemoveContainer: the record is gone, the container's budget cleared;
#    RemovePodSandbox and the pod's cgroup gone: no node is left.
. /containers/lib.sh
need_nxq
. /nri/lib.sh
nri_need
ctd_start

# the operator's CDI spec: what the plugin gives a container given a GPU
# (nri_inject checks what it gives; without it, such a container is refused)
dev_register
cdi_spec
: > /tmp/nri.log
plugin_start /tmp/nri.log
info "nxquota-nri registered after $(since "$t0")"

uid=$(poduid)
pcg=/kubepods/burstable/pod$uid
pod=$(nxq-cri runp p1 $uid $pcg 2>/tmp/cri.err) || fail "RunPodSandbox: $(cat /tmp/cri.err)"
info "pod $pod after $(since "$t0")"

ctr1=$(nxq-cri create $pod c1 localhost/nxq-app:1 -a nxquota.io/max=24Mi \
	-a nxquota.io/min=8Mi -a nxquota.io/pod-max=32Mi -a nxquota.io/pod-min=16Mi \
	-e NVIDIA_VISIBLE_DEVICES=$KEY -- /bin/sh -c 'sleep 1000' 2>/tmp/cri.err) ||
	fail "CreateContainer c1: $(cat /tmp/cri.err)"
t1=$(now_cs)
nxq-cri start $ctr1 2>/tmp/cri.err || fail "StartContainer c1: $(cat /tmp/cri.err)"
info "c1 started in $(since "$t1")"
ccg=$pcg/$ctr1
[ -d $CG$ccg ] || fail "c1's cgroup is not $ccg: $(cat /proc/*/cgroup 2>/dev/null | grep "$ctr1" | head -n 1)"
led
led_show
expect_node $ccg max $((24 * MiB))
expect_node $ccg min $((8 * MiB))
expect_node $pcg max $((32 * MiB))
expect_node $pcg min $((16 * MiB))
[ -f "$(rec_file $ctr1)" ] || fail "no record of c1"

# refused: the hook's reason reaches the CRI caller
ctr2=$(nxq-cri create $pod c2 localhost/nxq-app:1 -a nxquota.io/max=1Mi \
	-a nxquota.io/min=2Mi -e NVIDIA_VISIBLE_DEVICES=$KEY -- /bin/sh -c 'sleep 1000' \
	2>/tmp/cri.err) || fail "CreateContainer c2: $(cat /tmp/cri.err)"
if nxq-cri start $ctr2 2>/tmp/cri.err; then
	fail "c2 (min above max) started"
fi
grep -q 'is above max' /tmp/cri.err || fail "c2's refusal does not say why: $(cat /tmp/cri.err)"
info "c2 refused: $(cat /tmp/cri.err)"
[ ! -e "$(rec_file $ctr2)" ] || fail "a record of the refused c2"
nxq-cri rm $ctr2 2>/tmp/cri.err || fail "RemoveContainer c2: $(cat /tmp/cri.err)"

# a pod annotated as Kubernetes annotates (the pod, not its containers:
# kubelet gives a pod's annotations to RunPodSandbox only, and containerd
# copies none into a container's spec without pod_annotations, which
# containerd.toml does not set): its containers' budgets from the pod's
# nxquota.io/ annotations, a container's own key winning
uid2=$(poduid)
pcg2=/kubepods/burstable/pod$uid2
pod2=$(nxq-cri runp p2 $uid2 $pcg2 nxquota.io/max=12Mi nxquota.io/min=4Mi \
	nxquota.io/pod-max=20Mi nxquota.io/pod-min=8Mi 2>/tmp/cri.err) ||
	fail "RunPodSandbox p2: $(cat /tmp/cri.err)"
ctr5=$(nxq-cri create $pod2 c5 localhost/nxq-app:1 -e NVIDIA_VISIBLE_DEVICES=$KEY \
	-- /bin/sh -c 'sleep 1000' 2>/tmp/cri.err) || fail "CreateContainer c5: $(cat /tmp/cri.err)"
nxq-cri start $ctr5 2>/tmp/cri.err || fail "StartContainer c5: $(cat /tmp/cri.err)"
ctr6=$(nxq-cri create $pod2 c6 localhost/nxq-app:1 -a nxquota.io/max=10Mi \
	-e NVIDIA_VISIBLE_DEVICES=$KEY -- /bin/sh -c 'sleep 1000' 2>/tmp/cri.err) ||
	fail "CreateContainer c6: $(cat /tmp/cri.err)"
nxq-cri start $ctr6 2>/tmp/cri.err || fail "StartContainer c6: $(cat /tmp/cri.err)"
led
expect_node $pcg2/$ctr5 max $((12 * MiB))
expect_node $pcg2/$ctr5 min $((4 * MiB))
expect_node $pcg2/$ctr6 max $((10 * MiB))
expect_node $pcg2/$ctr6 min $((4 * MiB))
expect_node $pcg2 max $((20 * MiB))
expect_node $pcg2 min $((8 * MiB))
info "pod p2's annotations: c5 12Mi/4Mi, c6 its own max 10Mi and the pod's min, the pod 20Mi/8Mi"
for c in $ctr5 $ctr6; do
	nxq-cri stop $c 2>/tmp/cri.err || fail "StopContainer $c: $(cat /tmp/cri.err)"
	nxq-cri rm $c 2>/tmp/cri.err || fail "RemoveContainer $c: $(cat /tmp/cri.err)"
done
nxq-cri stopp $pod2 2>/tmp/cri.err || fail "StopPodSandbox p2: $(cat /tmp/cri.err)"
nxq-cri rmp $pod2 2>/tmp/cri.err || fail "RemovePodSandbox p2: $(cat /tmp/cri.err)"
cg_rmtree $pcg2

nxq-cri stop $ctr1 2>/tmp/cri.err || fail "StopContainer c1: $(cat /tmp/cri.err)"
nxq-cri rm $ctr1 2>/tmp/cri.err || fail "RemoveContainer c1: $(cat /tmp/cri.err)"
[ ! -e "$(rec_file $ctr1)" ] || fail "RemoveContainer left c1's record"
nxq-cri stopp $pod 2>/tmp/cri.err || fail "StopPodSandbox: $(cat /tmp/cri.err)"
nxq-cri rmp $pod 2>/tmp/cri.err || fail "RemovePodSandbox: $(cat /tmp/cri.err)"
cg_rmtree $pcg
led
left=$(led_paths | grep -v '^/$' | tr '\n' ' ')
[ -z "$left" ] || { led_show; fail "the ledger ($NXQ_AUTHORITY) still has: $left"; }
sed 's/^/    nri: /' /tmp/nri.log
stop_all
dev_unregister
exit 0
