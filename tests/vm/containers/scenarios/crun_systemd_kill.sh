#!/bin/sh
# crun_systemd_kill: a pod as the kubelet lays it out with the systemd
# driver (containerd's scope in the pod's slice, the pod's uid in the
# slice's name with systemd's '_' for '-'):
#   /kubepods.slice/kubepods-burstable.slice/
#     kubepods-burstable-pod<uid_>.slice/cri-containerd-<id>.scope
# one container, nxquota-hook in config.json; annotations pod-min 8Mi,
# pod-max 32Mi, max 16Mi; NXQUOTA_DEVICES gives the GPU.
#  - the pod's budget lands on the slice, the container's on the scope;
#    the unmodified program under the shim gets the pod's 8 MiB guarantee
#    and not one byte more, charged to the scope;
#  - crun kill -s KILL: the charging process dies; its holder and charge
#    go from the ledger while the container's cgroup (and budget) remain;
#  - crun delete runs poststop: the record goes, the scope's node with its
#    cgroup; removing the slices leaves nothing in the ledger.
. /containers/lib.sh
need_nxq

dev_register
x_fresh
uid=$(poduid)
uid_=$(echo "$uid" | tr - _)
id=$(hexid)
slice=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod$uid_.slice
scope=$slice/cri-containerd-$id.scope
# shellcheck disable=SC2046
mk_bundle /run/bundles/$id -c $scope -n $(ctr_gpu) \
	-a io.kubernetes.pod.uid=$uid -a io.kubernetes.cri.sandbox-id=$(hexid) \
	-a nxquota.io/pod-min=8Mi -a nxquota.io/pod-max=32Mi -a nxquota.io/max=16Mi \
	-e NXQUOTA_DEVICES=$KEY -- /bin/nxq-cuda-app --wait /x/stop 8M 1

crun_bg $id /run/bundles/$id /tmp/ctr.out || { cat /tmp/ctr.out; fail "crun run failed"; }
wait_line /tmp/ctr.out holding || { cat /tmp/ctr.out; fail "the program did not get to 'holding'"; }
sed 's/^/    ctr: /' /tmp/ctr.out
grep -qx "alloc $((8 * MiB)) ok" /tmp/ctr.out || fail "the shim refused 8 MiB, the pod's min"
grep -qx "alloc 1 error 2" /tmp/ctr.out || fail "one byte beyond the pod's min was not refused with CUDA_ERROR_OUT_OF_MEMORY"
led
led_show
expect_node $slice max $((32 * MiB))
expect_node $slice min $((8 * MiB))
expect_node $slice current $((8 * MiB))
expect_node $scope max $((16 * MiB))
expect_node $scope current $((8 * MiB))
[ "$(led_holders $scope)" = $((8 * MiB)) ] || fail "the scope's holders charge '$(led_holders $scope | tr '\n' ' ')', expected one of 8 MiB"

echo "--- crun kill -s KILL"
crun_do kill $id KILL || fail "crun kill failed"
crun_stopped $id || fail "the container did not stop after SIGKILL"
grep -q freed /tmp/ctr.out && fail "the program freed: it was not killed"
[ -d $CG$scope ] || fail "the scope's cgroup went before crun delete"
i=0
while led; [ "$(led_nholders)" != 0 ] && [ $i -lt 20 ]; do sleep 0.1; i=$((i + 1)); done
led_show
[ "$(led_nholders)" = 0 ] || fail "the killed process's holder is still in the ledger"
expect_node $scope current 0
expect_node $slice current 0
[ "$(led_dev used)" = 0 ] || fail "device used $(led_dev used) after the SIGKILL"
expect_node $scope max $((16 * MiB))

echo "--- crun delete"
[ -f "$(rec_file $id)" ] || fail "no record before poststop"
crun_do delete $id || fail "crun delete failed"
[ ! -e "$(rec_file $id)" ] || fail "poststop left the record $(rec_file $id)"
led
[ -z "$(led_paths | grep -x "$scope")" ] || { led_show; fail "the ledger still has $scope after crun delete removed its cgroup"; }
expect_node $slice max $((32 * MiB))
cg_rmtree $slice
led
left=$(led_paths | grep -v '^/$' | tr '\n' ' ')
[ -z "$left" ] || { led_show; fail "cgroups removed, but the ledger ($NXQ_AUTHORITY) still has: $left"; }
dev_unregister
exit 0
