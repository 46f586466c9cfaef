#!/bin/sh
# crun_pod: a Kubernetes pod as the kubelet lays it out with the cgroupfs
# driver, run by crun with nxquota-hook in config.json (createRuntime and
# poststop, as a CDI spec or containerd's base runtime spec puts it):
# /kubepods/burstable/pod<uid>/<ctr>, nothing set on /kubepods or
# /kubepods/burstable.  Both containers carry the pod's annotations
# (io.kubernetes.pod.uid, io.kubernetes.cri.sandbox-id, nxquota.io/pod-min
# 16Mi, nxquota.io/pod-max 32Mi); c1 also nxquota.io/max 24Mi and gets its
# GPU by NXQUOTA_DEVICES, c2 by NVIDIA_VISIBLE_DEVICES.
#  - the first hook sets the pod's budget, the second finds it in place;
#    c1's own max is set on c1's cgroup;
#  - c1's unmodified CUDA program under the shim takes 6 MiB, c2's 10 MiB:
#    each charge lands in its container's cgroup, the pod counts 16 MiB;
#    one byte more (c2) is refused: holders without an eventfd (the shim's)
#    share the pod's guarantee and may not borrow beyond it;
#  - a program linked with libnxquota (an eventfd holder) in c2 takes 16
#    MiB more, up to the pod's max (32 MiB in all), and a second one in c1
#    is refused 2 MiB by the pod's max though c1's own max has room;
#  - when the containers stop, their holders and charges go; crun delete
#    runs poststop: the records go, the containers' nodes go with their
#    cgroups; the pod's budget stays until the pod's cgroup is removed, and
#    then nothing of the pod is left in the ledger.
. /containers/lib.sh
need_nxq

dev_register
x_fresh
uid=$(poduid)
sb=$(hexid)
pod=/kubepods/burstable/pod$uid
c1=$(hexid)
c2=$(hexid)
podann="-a io.kubernetes.pod.uid=$uid -a io.kubernetes.cri.sandbox-id=$sb -a nxquota.io/pod-min=16Mi -a nxquota.io/pod-max=32Mi"
# shellcheck disable=SC2046,SC2086
mk_bundle /run/bundles/$c1 -c $pod/$c1 -n $(ctr_gpu) $podann \
	-a io.kubernetes.container.name=c1 -a nxquota.io/max=24Mi \
	-e NXQUOTA_DEVICES=$KEY -- /bin/nxq-cuda-app --wait /x/stop 6M
# shellcheck disable=SC2046,SC2086
mk_bundle /run/bundles/$c2 -c $pod/$c2 -n $(ctr_gpu) $podann \
	-a io.kubernetes.container.name=c2 \
	-e NVIDIA_VISIBLE_DEVICES=$KEY -- /bin/nxq-cuda-app --wait /x/stop 10M 1

echo "--- c1 $c1"
crun_bg $c1 /run/bundles/$c1 /tmp/c1.out || { cat /tmp/c1.out; fail "crun run c1 failed"; }
wait_line /tmp/c1.out holding || { cat /tmp/c1.out; fail "c1's program did not get to 'holding'"; }
sed 's/^/    c1: /' /tmp/c1.out
grep -qx "alloc $((6 * MiB)) ok" /tmp/c1.out || fail "c1: the shim refused 6 MiB under the pod's min of 16 MiB"
[ -f "$(rec_file $c1)" ] || fail "no record $(rec_file $c1) after c1's createRuntime"
led
led_show
expect_node $pod max $((32 * MiB))
expect_node $pod min $((16 * MiB))
expect_node $pod/$c1 max $((24 * MiB))
expect_node $pod/$c1 current $((6 * MiB))
expect_node $pod current $((6 * MiB))
[ "$(led_holders $pod/$c1)" = $((6 * MiB)) ] ||
	fail "c1's holders charge '$(led_holders $pod/$c1 | tr '\n' ' ')', expected one of $((6 * MiB))"
for p in /kubepods /kubepods/burstable; do
	[ "$(led_node $p max_set)" != true ] || fail "a budget on $p, which no annotation asked for"
done

echo "--- c2 $c2"
crun_bg $c2 /run/bundles/$c2 /tmp/c2.out || { cat /tmp/c2.out; fail "crun run c2 failed"; }
wait_line /tmp/c2.out holding || { cat /tmp/c2.out; fail "c2's program did not get to 'holding'"; }
sed 's/^/    c2: /' /tmp/c2.out
grep -qx "alloc $((10 * MiB)) ok" /tmp/c2.out ||
	fail "c2: the shim refused 10 MiB, which with c1's 6 MiB is the pod's min"
grep -qx "alloc 1 error 2" /tmp/c2.out ||
	fail "c2: one byte beyond the pod's min was not refused with CUDA_ERROR_OUT_OF_MEMORY (2): $(grep '^alloc 1 ' /tmp/c2.out)"
led
led_show
expect_node $pod current $((16 * MiB))
expect_node $pod/$c2 current $((10 * MiB))
expect_node $pod/$c1 current $((6 * MiB))
expect_node $pod max $((32 * MiB))
expect_node $pod min $((16 * MiB))
[ "$(led_node $pod/$c2 max_set)" = false ] || fail "c2's cgroup has a budget of its own ($(led_node $pod/$c2 max)); none was asked"
# the refusal names the node whose guarantee was used up: the pod
expect_node $pod denials 1

echo "--- libnxquota in c2: up to the pod's max"
crun_do exec --detach $c2 /bin/sh -c "exec /bin/nxq-libholder $KEY 16M > /x/lib2.out 2>&1" ||
	fail "crun exec (libholder in c2) failed"
wait_line $XDIR/lib2.out "allocated\|failed" || fail "libholder in c2 said nothing: $(cat $XDIR/lib2.out)"
sed 's/^/    c2 libholder: /' $XDIR/lib2.out
grep -q "^allocated $((16 * MiB)) " $XDIR/lib2.out ||
	fail "libholder in c2 did not get 16 MiB beyond the pod's min (an eventfd holder may borrow up to the pod's max): $(cat $XDIR/lib2.out)"
led
led_show
expect_node $pod current $((32 * MiB))
expect_node $pod/$c2 current $((26 * MiB))
[ "$(led_holders $pod/$c2 | sort -n | tr '\n' ' ')" = "$((10 * MiB)) $((16 * MiB)) " ] ||
	fail "c2's holders charge '$(led_holders $pod/$c2 | tr '\n' ' ')', expected the shim's 10 MiB and the library's 16 MiB"

echo "--- libnxquota in c1: the pod's max binds, not c1's own"
crun_do exec $c1 /bin/nxq-libholder $KEY 2M --hold 0
rc=$?
[ $rc = 2 ] && grep -q '^failed err=EDQUOT allocated=0' /tmp/crun.out ||
	fail "libholder in c1 asked 2 MiB above the pod's max: exit $rc, $(cat /tmp/crun.out) (expected exit 2, EDQUOT)"

echo "--- stop"
touch $XDIR/stop
crun_stopped $c1 || fail "c1 did not stop"
crun_stopped $c2 || fail "c2 did not stop"
grep -qx freed /tmp/c1.out || fail "c1's program did not free: $(tail -n 1 /tmp/c1.out)"
led
led_show
[ "$(led_nholders)" = 0 ] || fail "holders left after both containers' processes ended"
expect_node $pod current 0
[ "$(led_dev used)" = 0 ] || fail "device used $(led_dev used) after both containers' processes ended"

crun_do delete $c1 || fail "crun delete c1 failed"
crun_do delete $c2 || fail "crun delete c2 failed"
for c in $c1 $c2; do
	[ ! -e "$(rec_file $c)" ] || fail "poststop left the record $(rec_file $c)"
	[ ! -d $CG$pod/$c ] || fail "crun left the cgroup $pod/$c"
done
led
led_show
for c in $c1 $c2; do
	[ -z "$(led_paths | grep -x "$pod/$c")" ] ||
		fail "the ledger still has $pod/$c (max $(led_node $pod/$c max), current $(led_node $pod/$c current)) after its cgroup was removed"
done
expect_node $pod max $((32 * MiB))
expect_node $pod min $((16 * MiB))

echo "--- the pod's cgroup removed"
cg_rmtree $pod
[ ! -d $CG/kubepods ] || fail "cannot remove /kubepods"
led
left=$(led_paths | grep -v '^/$' | tr '\n' ' ')
if [ -n "$left" ]; then
	led_show
	fail "cgroups removed, but the ledger ($NXQ_AUTHORITY) still has: $left"
fi
dev_unregister
exit 0
