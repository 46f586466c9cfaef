#!/bin/sh
# podman_hooksd: the packaged oci-hooks(5) file
# (packaging/oci-hooks.d/nxquota.json, @SBINDIR@ as /usr/bin, as make
# install writes it) in /etc/containers/oci/hooks.d, next to the test
# hook's (nxq-test.json, nxq-test-poststop.json: same "when");
#   podman run --annotation nxquota.io/max=48Mi -e NVIDIA_VISIBLE_DEVICES=<KEY>
#  - createRuntime (run by crun): the test hook saw status "created" and a
#    pid already in /libpod_parent/libpod-<id>; nxquota-hook set max 48Mi,
#    min 0 there (the GPU given by NVIDIA_VISIBLE_DEVICES, a registered
#    device without a node) and wrote its record;
#  - poststop (run by podman itself after crun delete: no pid in the state,
#    status "stopped", hooks.d's JSON gives no environment): the record is
#    gone and nothing of the container is left in the ledger.
. /containers/lib.sh
need_nxq

dev_register
x_fresh
mkdir -p /etc/containers/oci/hooks.d
cp /usr/share/nxquota/oci-hooks.json /etc/containers/oci/hooks.d/nxquota.json
grep -q "\"path\": *\"$NXQ_HOOK\"" /etc/containers/oci/hooks.d/nxquota.json ||
	fail "the packaged hooks.d file does not name $NXQ_HOOK: $(cat /etc/containers/oci/hooks.d/nxquota.json)"

cf=$(cidfile)
t0=$(now_cs)
podman run --rm --network none --cidfile "$cf" --annotation nxquota.io/max=48Mi \
	-e NVIDIA_VISIBLE_DEVICES=$KEY -v $XDIR:/x --rootfs "$CTR_ROOTFS" \
	/bin/sh -c 'touch /x/started; while [ ! -e /x/stop ]; do sleep 0.1; done' \
	< /dev/null > /tmp/pm.out 2>&1 &
pmpid=$!
i=0
while [ ! -e $XDIR/started ] && [ $i -lt 900 ]; do sleep 0.1; i=$((i + 1)); done
if [ ! -e $XDIR/started ]; then
	kill $pmpid 2>/dev/null
	wait $pmpid
	cat /tmp/pm.out
	fail "the podman container did not start"
fi
info "podman run: the container runs after $(since "$t0")"
c=$(cid "$cf")
[ -n "$c" ] || fail "podman wrote no --cidfile"
cg=/libpod_parent/libpod-$c

expect_hook "$c" createRuntime hooksd
[ "$(hook_get "$f" status)" = created ] || fail "createRuntime: state status '$(hook_get "$f" status)', expected created"
[ "$(cg_of "$(hook_get "$f" cgroup)")" = "$cg" ] ||
	fail "createRuntime: the container's pid in '$(hook_get "$f" cgroup)', expected $cg"
[ -f "$(rec_file $c)" ] || fail "nxquota-hook (hooks.d) wrote no record: it did not run, or set nothing"
led
led_show
expect_node $cg max $((48 * MiB))
expect_node $cg min 0

touch $XDIR/stop
wait $pmpid
rc=$?
info "podman run: exit $rc in $(since "$t0")"
sed 's/^/    | /' /tmp/pm.out
pm_settle
pm_cg_clean
[ $rc = 0 ] || fail "podman run exited $rc"
expect_hook "$c" poststop hooksd
[ "$(hook_get "$f" status)" = stopped ] || fail "poststop: state status '$(hook_get "$f" status)', expected stopped"
[ "$(hook_get "$f" pid)" = none ] || fail "poststop run by podman: a pid in the state ($(hook_get "$f" pid))"
[ ! -e "$(rec_file $c)" ] || fail "podman's poststop run of nxquota-hook left the record"
led
left=$(led_paths | grep -v '^/$' | tr '\n' ' ')
[ -z "$left" ] || { led_show; fail "after the container, the ledger ($NXQ_AUTHORITY) still has: $left"; }
dev_unregister
exit 0
