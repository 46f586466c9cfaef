#!/bin/sh
# crun_lies: what a tenant writes in config.json cannot move a budget.
#  moved     linux.cgroupsPath says /nxq-tenant/said-<id>, but a
#            createRuntime hook that runs before nxquota-hook moves the
#            container's process to /nxq-tenant/real-<id>: the hook reads
#            the pid's cgroup, so the budget (max 8Mi, min 8Mi) lands on
#            real-<id>, where the program's charges are; said-<id> gets
#            nothing; poststop clears real-<id>'s budget (its cgroup is
#            still there: crun removed only said-<id>)
#  envonly   $KEY2 is registered with a dev_t (that of /dev/full here):
#            NVIDIA_VISIBLE_DEVICES naming it gives no node, so it was not
#            given and nxquota.io/max.<KEY2> is refused; with /dev/full in
#            linux.devices (as a device plugin or CDI gives the node) the
#            same annotation sets the budget
#  otherpod  in pod A's cgroup with pod B's uid in io.kubernetes.pod.uid:
#            the pod budget is refused (the parent is not B's)
#  shared    io.kubernetes.cri.sandbox-id, but the parent cgroup is
#            /machine.slice: no pod budget there
. /containers/lib.sh
need_nxq

dev_register
full=$(stat -c '%t:%T' /dev/full)
full=$((0x${full%:*})):$((0x${full#*:}))
dev_register $KEY2 1G "$full"
x_fresh

echo "--- moved"
id=$(hexid)
said=/nxq-tenant/said-$id
real=/nxq-tenant/real-$id
mkdir -p $CG$real
mkdir -p /run/bundles
cat > /run/bundles/mover.sh <<'EOF'
#!/bin/sh
# createRuntime hook: move the state's pid to cgroup $1
read -r s
p=${s#*\"pid\"}
p=${p#*:}
p=${p%%[,\}]*}
p=$(echo $p)
echo "$p" > /sys/fs/cgroup$1/cgroup.procs
EOF
mover="{\"path\": \"/bin/sh\", \"args\": [\"sh\", \"/run/bundles/mover.sh\", \"$real\"], \"timeout\": 10}"
# shellcheck disable=SC2046
mk_bundle /run/bundles/$id -c $said -R "createRuntime:$mover" -n $(ctr_gpu) \
	-a nxquota.io/max=8Mi -a nxquota.io/min=8Mi -e NXQUOTA_DEVICES=$KEY \
	-- /bin/nxq-cuda-app --wait /x/stop 4M
crun_bg $id /run/bundles/$id /tmp/ctr.out || { cat /tmp/ctr.out; fail "crun run failed"; }
wait_line /tmp/ctr.out holding || { cat /tmp/ctr.out; fail "the program did not get to 'holding'"; }
sed 's/^/    ctr: /' /tmp/ctr.out
grep -qx "alloc $((4 * MiB)) ok" /tmp/ctr.out || fail "the shim refused 4 MiB under a min of 8 MiB"
led
led_show
expect_node $real max $((8 * MiB))
expect_node $real min $((8 * MiB))
expect_node $real current $((4 * MiB))
[ -z "$(led_paths | grep -x "$said")" ] ||
	fail "the ledger has a node for $said, the cgroup config.json named (max $(led_node $said max))"
touch $XDIR/stop
crun_stopped $id || fail "the container did not stop"
crun_do delete $id || fail "crun delete failed"
[ ! -e "$(rec_file $id)" ] || fail "poststop left the record"
[ -d $CG$real ] || fail "$real is gone"
led
led_show
[ "$(led_node $real max_set)" != true ] && [ "$(led_node $real min)" != $((8 * MiB)) ] ||
	fail "poststop did not clear the budget of $real (max $(led_node $real max), min $(led_node $real min))"
rmdir $CG$real $CG/nxq-tenant || fail "cannot remove $real"

led
before=$(led_budgets)
must_refuse envonly "${KEY2#GPU-}" /nxq-tenant -e NVIDIA_VISIBLE_DEVICES=$KEY2 \
	-a nxquota.io/max.$KEY2=8Mi
id=$(hexid)
mk_bundle /run/bundles/$id -c /nxq-tenant/$id -n -d /dev/full -e NVIDIA_VISIBLE_DEVICES=$KEY2 \
	-a nxquota.io/max.$KEY2=8Mi -- /bin/true
crun_do create --bundle /run/bundles/$id $id || fail "crun create with /dev/full in linux.devices failed"
led
expect_node /nxq-tenant/$id max $((8 * MiB)) $KEY2
crun_do delete -f $id || fail "crun delete failed"
[ ! -e "$(rec_file $id)" ] || fail "poststop left the record"
rmdir $CG/nxq-tenant

led
before=$(led_budgets)
uid=$(poduid)
must_refuse otherpod "not the pod of its annotations" /kubepods/burstable/pod$uid -e NXQUOTA_DEVICES=$KEY \
	-a io.kubernetes.pod.uid=$(poduid) -a io.kubernetes.cri.sandbox-id=$(hexid) \
	-a nxquota.io/pod-max=8Mi
must_refuse shared "not a pod's" /machine.slice -e NXQUOTA_DEVICES=$KEY \
	-a io.kubernetes.cri.sandbox-id=$(hexid) -a nxquota.io/pod-max=8Mi
cg_rmtree /kubepods/burstable/pod$uid
rmdir $CG/machine.slice

led
left=$(led_paths | grep -v '^/$' | tr '\n' ' ')$(led_paths $KEY2 | grep -v '^/$' | tr '\n' ' ')
[ -z "$left" ] || { led_show; led_show $KEY2; fail "cgroups removed, but the ledger ($NXQ_AUTHORITY) still has: $left"; }
dev_unregister $KEY2
dev_unregister
exit 0
