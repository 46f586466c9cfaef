#!/bin/sh
# nxq-timeout: 300
# nri_matrix: 16 pods through containerd 1.7 (Debian trixie's) with NRI,
# driven as a kubelet would by nxq-cri, budgeted by nxquota-nri (issue 28,
# item 4's first target; integrations/nri/test/run.sh nri_matrix runs it).
# The matrix: 2 cgroup layouts x 4 budget sources x 2 GPUs, one pod of one
# container a cell, every size different from every other cell's.
#  - layouts, as kubelet names a pod's cgroup (the CgroupParent of
#    RunPodSandbox): cgroupfs, /kubepods/burstable/pod<uid> (GPU 0) and
#    /kubepods/pod<uid> (GPU 1, guaranteed), each container in
#    <pod>/<id>; systemd, /kubepods.slice/kubepods-burstable.slice/
#    kubepods-burstable-pod<uid_>.slice (GPU 0; uid_: the uid with _ for -)
#    and /kubepods.slice/kubepods-pod<uid_>.slice (GPU 1), each container
#    in <pod>/cri-containerd-<id>.scope.  There is no systemd in the VM:
#    containerd's cgroupfs driver (SystemdCgroup = false) is given the
#    slice paths as the pods' CgroupParent.  containerd 1.7 then writes
#    any parent whose last name ends in .slice in runc's systemd form,
#    cgroupsPath "kubepods-burstable-pod<uid_>.slice:cri-containerd:<id>"
#    (pkg/cri getCgroupsPath(), whatever the driver), which runc's
#    cgroupfs driver takes as one cgroup of that name under the root (seen:
#    nxquota-hook refuses it, "is a child of the root cgroup, which is no
#    pod's").  So containerd runs runc through a wrapper
#    (/run/nxq-matrix/runc, below) that does at create what runc's
#    systemd driver asks of systemd: the unit cri-containerd-<id>.scope in
#    that slice, at systemd's path for it (a-b-c.slice is
#    /a.slice/a-b.slice/a-b-c.slice); nothing else changes, and the hook
#    sees what it reads on a systemd node (/proc/<pid>/cgroup);
#  - sources (tools/nxquota-hook.8), each giving its GPU as its maker
#    does: annotations nxquota.io/max, min, pod-max, pod-min, and
#    NVIDIA_GPU_MEMORY_LIMIT (max) and _REQUEST (min), each with
#    NVIDIA_VISIBLE_DEVICES=<UUID>; HAMi's device plugin,
#    NVIDIA_VISIBLE_DEVICES=<UUID> and CUDA_DEVICE_MEMORY_LIMIT_0=<N>m
#    (max = min), as its Allocate answer gives them and kubelet passes
#    them on as the CRI's envs; HAMi's DRA driver, NVIDIA_VISIBLE_DEVICES=
#    void and CUDA_DEVICE_MEMORY_LIMIT_0=<N>m with the GPU's node
#    /dev/nvidia<g> in linux.devices, nothing else naming it (max = min).
#    The DRA driver's edits come from the claim's CDI spec, which
#    containerd applies with enable_cdi (off here; kubelet passes the
#    claim as CDI device names): they are given as the CRI's envs and
#    devices, so that config.json has the shape it would have after
#    containerd applied that spec (the shape the hook reads);
#  - GPUs: GPU 0 and 1 are the fake driver's devices 0 and 1
#    (FAKECUDA_DEVICES=2 in the containers, nxq-cuda-app --device),
#    registered without a node's numbers, as nri_basic's: a device
#    registered with them takes a holder only from a process that opened
#    its node, found through the NVIDIA driver
#    (/proc/driver/nvidia/gpus/*/information, lib/gpu_node.h), which the
#    VM has not: nothing could charge it here ("cannot register a holder
#    ... (Permission denied)", seen).  HAMi's DRA gives a GPU by its node
#    alone, which the hook maps to a device by its numbers: its GPU 0 and
#    1 are GPU-...f4f2 and GPU-...f4f3 registered at 195:0 and 195:1, with
#    /dev/nvidia0 and /dev/nvidia1 made for them (no driver behind them:
#    only their numbers are read, and runc makes them in the containers).
#    The DRA cells are checked in the ledger only: their program holds and
#    charges nothing.  No index (NVIDIA_VISIBLE_DEVICES=0) either: an index
#    is a node's numbers, and a name in process.env gives a device with
#    numbers only with its node (or NXQUOTA_HOOK_TRUST_ENV=1 in the hook's
#    environment, which the plugin does not set).
# Every container's entrypoint is nxq-cuda-app itself, given what the
# operator's CDI spec gives (LD_PRELOAD, the authority; NXQ_PRELOAD_BATCH=0
# charges each allocation exactly): its first act allocates its cell's min
# on its GPU, then 1 byte, and holds.  A program under the shim cannot
# give memory back, so it charges within its guarantee only
# (nxquota-hook(8), EXAMPLES): min granted, 1 byte more refused, which
# only its cell's budget does, in place before its first instruction.  It
# writes that to its CRI log, which is read.  Checked for every cell once
# all 16 run: the ledger's max and min on the container's cgroup on its
# GPU and no node of it or of its pod on the 3 other devices; the pod's
# max and min for annotations, none for the other sources; one holder on
# the container's node charging min (6 on each of GPU 0 and 1, none on
# the DRA devices); nxquota-hook's record.  Then all are removed
# (RemoveContainer, RemovePodSandbox, the pod's cgroup as kubelet does):
# no record, holder or node is left on any device.
. /containers/lib.sh
need_nxq
. /nri/lib.sh
nri_need
SPEC=/etc/cdi/nxquota.json
# the fake driver's devices 1, 2, 3 (device 0 is $KEY)
KEYB=GPU-f0f1f2f3-f4f5-f6f7-f8f9-f0f1f2f3f4f1
KEYC=GPU-f0f1f2f3-f4f5-f6f7-f8f9-f0f1f2f3f4f2
KEYD=GPU-f0f1f2f3-f4f5-f6f7-f8f9-f0f1f2f3f4f3
KEYS="$KEY $KEYB $KEYC $KEYD"
LOGS=/run/nxq-cri/logs

NODES=
nri_stop_more() { [ -z "$NODES" ] || rm -f /dev/nvidia0 /dev/nvidia1; }
# get I FIELD: cell I's FIELD (from $M/cell.I)
get() { eval "echo \"\$m_${1}_$2\""; }
# no_node PATH KEY WHAT: FAIL if the last led has a node PATH on KEY
no_node() {
	! led_paths "$2" | grep -qx "$1" || { led_show "$2"; fail "$3: the ledger has $1 on $2"; }
}

for n in 0 1; do
	[ ! -e /dev/nvidia$n ] || skip "/dev/nvidia$n exists in the VM"
done
NODES=1
mknod /dev/nvidia0 c 195 0 && mknod /dev/nvidia1 c 195 1 || fail "mknod /dev/nvidia0, 1"

x_fresh
# runc as the systemd driver would place a container (see above): at
# create, a cgroupsPath SLICE:PREFIX:NAME becomes systemd's path of unit
# PREFIX-NAME.scope in SLICE (a-b-c.slice is /a.slice/a-b.slice/a-b-c.slice)
M=/run/nxq-matrix
rm -rf $M
mkdir -p $M
cat > /run/nxq-matrix/runc <<'RUNC'
#!/bin/sh
b= c= prev=
for a in "$@"; do
	case "$prev" in --bundle|-b) b=$a ;; esac
	case "$a" in create|run) c=1 ;; esac
	prev=$a
done
if [ -n "$c" ] && [ -f "$b/config.json" ]; then
	cp=$(sed -n 's/.*"cgroupsPath": *"\([^"]*\)".*/\1/p' "$b/config.json")
	case "$cp" in
	*.slice:*:*)
		slice=${cp%%:*} rest=${cp#*:}
		p= acc=
		IFS=-
		for part in ${slice%.slice}; do
			acc=${acc:+$acc-}$part
			p=$p/$acc.slice
		done
		unset IFS
		sed -i "s|\"cgroupsPath\": *\"$cp\"|\"cgroupsPath\":\"$p/${rest%%:*}-${rest#*:}.scope\"|" "$b/config.json" ;;
	esac
fi
exec /usr/bin/runc "$@"
RUNC
chmod 755 /run/nxq-matrix/runc
sed 's|^\( *BinaryName = \)"/usr/bin/runc"|\1"/run/nxq-matrix/runc"|' /nri/containerd.toml \
	> /run/nxq-matrix/containerd.toml
grep -q '"/run/nxq-matrix/runc"' /run/nxq-matrix/containerd.toml ||
	fail "/nri/containerd.toml has no BinaryName = \"/usr/bin/runc\""
ctd_start /run/nxq-matrix/containerd.toml

dev_register $KEY 1G
dev_register $KEYB 1G
dev_register $KEYC 1G 195:0
dev_register $KEYD 1G 195:1
cdi_spec
: > /tmp/nri.log
plugin_start /tmp/nri.log -cdi-spec $SPEC
info "nxquota-nri registered after $(since "$t0")"

# ---- 16 pods: cell i = layout*8 + source*2 + gpu -------------------------
# max 40+2i MiB; min 8+i MiB (annotations, NVIDIA), = max (HAMi's);
# pod-max 100+2i MiB, pod-min 24+i MiB (annotations): no two alike.
# cell I: its pod and container, created and started; what the checks
# need in $M/cell.I (sourced), or the reason in $M/fail.I.
cell() {
	local i=$1 lay src g key uid pcg max min pmax pmin what pod ctr tc err app
	lay=$((i / 8)) src=$((i / 2 % 4)) g=$((i % 2))
	err=$M/err.$i
	if [ $g = 0 ]; then key=$KEY; else key=$KEYB; fi
	uid=$(poduid)
	case $lay$g in
	00) pcg=/kubepods/burstable/pod$uid ;;
	01) pcg=/kubepods/pod$uid ;;
	10) pcg=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod$(echo $uid | tr - _).slice ;;
	11) pcg=/kubepods.slice/kubepods-pod$(echo $uid | tr - _).slice ;;
	esac
	max=$((40 + 2 * i)) min=$((8 + i)) pmax= pmin=
	case $src in
	0)	pmax=$((100 + 2 * i)) pmin=$((24 + i))
		set -- -a nxquota.io/max=${max}Mi -a nxquota.io/min=${min}Mi \
			-a nxquota.io/pod-max=${pmax}Mi -a nxquota.io/pod-min=${pmin}Mi \
			-e NVIDIA_VISIBLE_DEVICES=$key
		what="annotations, NVIDIA_VISIBLE_DEVICES=<UUID>" ;;
	1)	set -- -e NVIDIA_VISIBLE_DEVICES=$key -e NVIDIA_GPU_MEMORY_LIMIT=${max}Mi \
			-e NVIDIA_GPU_MEMORY_REQUEST=${min}Mi
		what="NVIDIA_GPU_MEMORY_*, NVIDIA_VISIBLE_DEVICES=<UUID>" ;;
	2)	min=$max
		set -- -e NVIDIA_VISIBLE_DEVICES=$key -e CUDA_DEVICE_MEMORY_LIMIT_0=${max}m \
			-e CUDA_DEVICE_SM_LIMIT=50
		what="HAMi device plugin, NVIDIA_VISIBLE_DEVICES=<UUID>" ;;
	3)	min=$max
		if [ $g = 0 ]; then key=$KEYC; else key=$KEYD; fi
		# the GPU's node, as the claim's CDI deviceNodes bring it
		set -- -e NVIDIA_VISIBLE_DEVICES=void -e CUDA_DEVICE_MEMORY_LIMIT_0=${max}m \
			-e CUDA_DEVICE_SM_LIMIT_0=100 -d /dev/nvidia$g
		what="HAMi DRA, NVIDIA_VISIBLE_DEVICES=void, /dev/nvidia$g" ;;
	esac
	what="cell $i ($what, $pcg, GPU $g)"
	# the program: its min, then 1 byte, on its GPU (not on a GPU with
	# numbers, which it cannot charge here: it only holds)
	app="--device $g $((min * MiB)) 1"
	[ $src != 3 ] || app=
	tc=$(now_cs)
	pod=$(nxq-cri runp p$i $uid $pcg 2>$err) ||
		{ echo "$what: RunPodSandbox: $(cat $err)" > $M/fail.$i; return 1; }
	ctr=$(nxq-cri create $pod c$i localhost/nxq-app:1 "$@" -e FAKECUDA_DEVICES=2 \
		-e NXQ_PRELOAD_BATCH=0 -m $XDIR:/x -- /bin/nxq-cuda-app --wait /x/stop \
		$app 2>$err) ||
		{ echo "$what: CreateContainer: $(cat $err)" > $M/fail.$i; return 1; }
	nxq-cri start $ctr 2>$err ||
		{ echo "$what: StartContainer: $(cat $err)" > $M/fail.$i; return 1; }
	info "cell $i: pod and container started in $(since $tc)"
	ccg=$pcg/$ctr
	[ $lay = 0 ] || ccg=$pcg/cri-containerd-$ctr.scope
	for f in uid pcg ccg pod ctr key max min pmax pmin what src; do
		eval "echo \"m_${i}_$f='\$$f'\""
	done > $M/cell.$i
}

# streams CMD: CMD 0..15 in $STREAMS streams at once (the guest idles
# between the steps of one start); FAILs with the first cell's reason
streams() {
	local s=0 pids= i
	rm -f $M/fail.*
	while [ $s -lt $STREAMS ]; do
		( i=$s; while [ $i -lt $NCELLS ]; do $1 $i || exit 1; i=$((i + STREAMS)); done ) &
		pids="$pids $!"
		s=$((s + 1))
	done
	wait $pids
	for i in $(seq 0 $((NCELLS - 1))); do
		[ ! -f $M/fail.$i ] || fail "$(cat $M/fail.$i)"
	done
}
# gone I: cell I's program freed what it held; its container stopped and
# removed (RemoveContainer: no record left), its pod removed
# (RemovePodSandbox, and its cgroup, as kubelet does)
gone() {
	local i=$1 ctr uid err=$M/err.$1
	ctr=$(get $i ctr) uid=$(get $i uid)
	wait_line $LOGS/$uid/c$i.log ' freed$' 30 ||
		{ echo "cell $i: its program did not free: $(tail -n 2 $LOGS/$uid/c$i.log)" > $M/fail.$i; return 1; }
	# kubelet's order: containerd 1.7 removes no running container
	nxq-cri stop $ctr 2>$err ||
		{ echo "cell $i: StopContainer: $(cat $err)" > $M/fail.$i; return 1; }
	nxq-cri rm $ctr 2>$err ||
		{ echo "cell $i: RemoveContainer: $(cat $err)" > $M/fail.$i; return 1; }
	[ ! -e "$(rec_file $ctr)" ] ||
		{ echo "cell $i: RemoveContainer left the record" > $M/fail.$i; return 1; }
	nxq-cri rmp $(get $i pod) 2>$err ||
		{ echo "cell $i: RemovePodSandbox: $(cat $err)" > $M/fail.$i; return 1; }
	cg_rmtree $(get $i pcg)
}
STREAMS=4 NCELLS=16
t1=$(now_cs)
streams cell
i=0
while [ $i -lt $NCELLS ]; do
	[ -f $M/cell.$i ] || fail "cell $i: not started (its stream stopped at an earlier cell)"
	. $M/cell.$i
	i=$((i + 1))
done
info "$NCELLS pods created and started in $(since "$t1")"

# ---- the checks -----------------------------------------------------------
t1=$(now_cs)
i=0
while [ $i -lt $NCELLS ]; do
	log=$LOGS/$(get $i uid)/c$i.log
	wait_line $log ' holding$' 60 ||
		fail "cell $i ($(get $i what)): its program did not get to 'holding': $(cat $log 2>/dev/null)"
	i=$((i + 1))
done
led
i=0
while [ $i -lt $NCELLS ]; do
	pcg=$(get $i pcg) ccg=$(get $i ccg) ctr=$(get $i ctr) key=$(get $i key)
	max=$(get $i max) min=$(get $i min) pmax=$(get $i pmax) pmin=$(get $i pmin)
	what=$(get $i what) src=$(get $i src)
	log=$LOGS/$(get $i uid)/c$i.log
	sed "s/^/    c$i: /" $log
	if [ $src != 3 ]; then
		grep -q "F alloc $((min * MiB)) ok\$" $log ||
			fail "$what: its first allocation, its min ($min MiB), was not granted"
		grep -q 'F alloc 1 error 2$' $log ||
			fail "$what: 1 byte past its min ($min MiB) was not refused"
	fi
	[ -d $CG$ccg ] || fail "$what: the container's cgroup is not $ccg"
	expect_node $ccg max $((max * MiB)) $key
	expect_node $ccg min $((min * MiB)) $key
	for k in $KEYS; do
		[ $k = $key ] || { no_node $ccg $k "$what"; no_node $pcg $k "$what"; }
	done
	if [ -n "$pmax" ]; then
		expect_node $pcg max $((pmax * MiB)) $key
		expect_node $pcg min $((pmin * MiB)) $key
	else
		# the container's node's parent, with no budget of its own
		expect_node $pcg max null $key
		expect_node $pcg min 0 $key
	fi
	if [ $src != 3 ]; then
		[ "$(led_holders $ccg $key)" = $((min * MiB)) ] ||
			fail "$what: holders on $key charge '$(led_holders $ccg $key | tr '\n' ' ')', expected one of $min MiB"
	fi
	[ -f "$(rec_file $ctr)" ] || fail "$what: no record"
	i=$((i + 1))
done
n=$(led_nholders $KEY) nb=$(led_nholders $KEYB) nc=$(led_nholders $KEYC) nd=$(led_nholders $KEYD)
[ "$n $nb $nc $nd" = "6 6 0 0" ] ||
	fail "holders: $n on $KEY, $nb on $KEYB, $nc on $KEYC, $nd on $KEYD; expected 6, 6, 0, 0"
info "$NCELLS cells checked in $(since "$t1"): budgets, holders and records where they belong"

# ---- the end --------------------------------------------------------------
t1=$(now_cs)
touch $XDIR/stop
streams gone
led
for k in $KEYS; do
	left=$(led_paths $k | grep -v '^/$' | tr '\n' ' ')
	[ -z "$left" ] || { led_show $k; fail "the ledger ($NXQ_AUTHORITY) still has on $k: $left"; }
	[ "$(led_nholders $k)" = 0 ] || fail "holders left on $k"
done
left=$(ls /run/nxquota/hooks 2>/dev/null | tr '\n' ' ')
[ -z "$left" ] || fail "records left: $left"
info "$NCELLS pods removed in $(since "$t1"); no record, holder or node left; all in $(since "$t0")"
grep -c 'createRuntime .*: ok in' /tmp/nri.log | sed 's/^/info: the plugin set budgets for /; s/$/ containers/'
stop_all
for k in $KEYS; do dev_unregister $k; done
exit 0
