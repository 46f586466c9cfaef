#!/bin/sh
# podman_cdi: the operator's CDI spec, as `nxquotactl cdi generate` writes
# it in the VM (--hook /usr/bin/nxquota-hook, --shim the VM's copy of
# libnxquota-preload.so), read by podman 4.3 from /etc/cdi:
#   podman run --rm --device nxquota.io/gpu=<KEY>
#       --annotation nxquota.io/max=64Mi --annotation nxquota.io/min=64Mi ...
# runs nxq-cuda-app, an unmodified CUDA program, under the shim:
#  - the spec gave the container the shim (read-only, LD_PRELOAD), the
#    authority (module: /dev/nxquota; nxquotad: the directory of its client
#    socket, read-only, holding that socket alone, and NXQUOTA_SOCKET, and
#    not its control socket), NXQUOTA_REQUIRE=1 and
#    NXQUOTA_DEVICE_<KEY>=<KEY>, which told the spec's createRuntime hook
#    (nxquota-hook, run by crun) which GPU the container was given;
#  - a process started with an empty environment (env -i) is charged all
#    the same: the spec's /etc/ld.so.preload loads the shim, and its
#    /etc/nxquota/require keeps it fail-closed; 65 MiB refused beyond the
#    64Mi budget, 1 MiB granted (before issue 28: 65 MiB granted, nothing
#    charged);
#  - the hook set max and min 64Mi on /libpod_parent/libpod-<id>; the
#    program's 60 MiB and 4 MiB are charged there and one byte more is
#    refused (CUDA_ERROR_OUT_OF_MEMORY): bounded by 64Mi;
#  - after it exits: the spec's poststop hook (run by crun delete) removed
#    the record, podman removed the cgroup, the ledger has no node, holder
#    or charge of it.
# (min too: what cuMemAlloc holds cannot be given back without the
# application, so the shim's holder has no eventfd and may charge only
# within its cgroup's guarantee, preload/README.md.)
. /containers/lib.sh
need_nxq

dev_register
x_fresh
$NXQCTL cdi generate --output /etc/cdi/nxquota.json --hook $NXQ_HOOK --shim $SHIM \
	--preload-list $PRELOAD_LIST \
	> /tmp/cdi.out 2>&1 || fail "nxquotactl cdi generate failed: $(cat /tmp/cdi.out)"
sed 's/^/    cdi generate: /' /tmp/cdi.out
grep -q "\"name\": *\"$KEY\"" /etc/cdi/nxquota.json || { cat /etc/cdi/nxquota.json; fail "the spec has no device $KEY"; }

cf=$(cidfile)
t0=$(now_cs)
podman run --rm --network none --cidfile "$cf" --device nxquota.io/gpu=$KEY \
	--annotation nxquota.io/max=64Mi --annotation nxquota.io/min=64Mi \
	-e NXQ_PRELOAD_BATCH=0 -v $XDIR:/x --rootfs "$CTR_ROOTFS" \
	/bin/sh -c 'env > /x/env
		grep " /usr/lib/nxquota/" /proc/self/mountinfo > /x/mounts
		for f in /dev/nxquota /run/nxquota/client/nxquota.sock /run/nxquota/control.sock; do
			[ -e $f ] && echo "$f $(stat -c "%F %t:%T" $f)" || echo "$f missing"
		done > /x/nodes
		ls -A /run/nxquota/client > /x/clientdir 2>&1
		touch /run/nxquota/client/x 2>/dev/null && echo "touch: ok" >> /x/clientdir
		grep -E " /etc/ld.so.preload | /etc/nxquota/require " /proc/self/mountinfo > /x/lists
		env -i /bin/nxq-cuda-app 65M 1M > /x/envi.out 2>&1
		rm -f /etc/nxquota/require 2>/dev/null || echo "rm: refused" >> /x/lists
		exec /bin/nxq-cuda-app --wait /x/stop 60M 4M 1 > /x/app.out 2>&1' \
	< /dev/null > /tmp/pm.out 2>&1 &
pmpid=$!
if ! wait_line $XDIR/app.out holding 90; then
	kill $pmpid 2>/dev/null
	wait $pmpid
	cat /tmp/pm.out
	fail "the program in the podman container did not get to 'holding': $(cat $XDIR/app.out 2>/dev/null)"
fi
info "podman run: the program holds after $(since "$t0")"
c=$(cid "$cf")
[ -n "$c" ] || fail "podman wrote no --cidfile"
cg=/libpod_parent/libpod-$c
sed 's/^/    app: /' $XDIR/app.out
sed 's/^/    node: /' $XDIR/nodes
sed 's/^/    mount: /' $XDIR/mounts
grep '^LD_PRELOAD=\|^NXQUOTA' $XDIR/env | sed 's/^/    env: /'

# what the spec gave the container
grep -qx "LD_PRELOAD=$SHIM" $XDIR/env || fail "the spec's LD_PRELOAD did not reach the container"
grep -qx 'NXQUOTA_REQUIRE=1' $XDIR/env || fail "the spec's NXQUOTA_REQUIRE=1 did not reach the container"
var=NXQUOTA_DEVICE_$(echo "$KEY" | tr 'a-z-' 'A-Z_')
grep -qx "$var=$KEY" $XDIR/env || fail "the device's $var=$KEY did not reach the container"
grep -q " $SHIM .* ro[ ,]" $XDIR/mounts || fail "the shim is not mounted read-only at $SHIM"
if [ "$NXQ_AUTHORITY" = daemon ]; then
	grep -qx 'NXQUOTA_SOCKET=/run/nxquota/client/nxquota.sock' $XDIR/env || fail "NXQUOTA_SOCKET did not reach the container"
	grep -q '^/run/nxquota/client/nxquota.sock socket' $XDIR/nodes || fail "nxquotad's client socket is not in the container"
	# its directory, read-only, with nothing else in it
	sed 's/^/    client dir: /' $XDIR/clientdir
	[ "$(cat $XDIR/clientdir)" = nxquota.sock ] || fail "the container's /run/nxquota/client holds '$(cat $XDIR/clientdir | tr '\n' ' ')', not the client socket alone (or the container could write there)"
	grep -qx '/run/nxquota/control.sock missing' $XDIR/nodes || fail "nxquotad's control socket is in the container"
	grep -qx '/dev/nxquota missing' $XDIR/nodes || fail "/dev/nxquota in the container without the module"
else
	dev=$(stat -c '%t:%T' /dev/nxquota)
	grep -qx "/dev/nxquota character special file $dev" $XDIR/nodes || fail "/dev/nxquota ($dev) is not in the container"
fi

# a clean environment is no way out (issue 28)
sed 's/^/    env -i: /' $XDIR/envi.out
sed 's/^/    list: /' $XDIR/lists
grep -q " /etc/ld.so.preload ro[ ,]" $XDIR/lists || fail "the preload list is not mounted read-only at /etc/ld.so.preload"
grep -q " /etc/nxquota/require ro[ ,]" $XDIR/lists || fail "the require file is not mounted read-only at /etc/nxquota/require"
grep -qx "rm: refused" $XDIR/lists || fail "the container removed /etc/nxquota/require"
grep -qx "alloc $((65 * MiB)) error 2" $XDIR/envi.out || fail "env -i: 65 MiB beyond the 64Mi budget was not refused: it ran uncharged"
grep -qx "alloc $((1 * MiB)) ok" $XDIR/envi.out || fail "env -i: 1 MiB under the budget was refused (no authority reached?)"

# the budget, the charges
grep -qx "alloc $((60 * MiB)) ok" $XDIR/app.out || fail "the shim refused 60 MiB under min=max=64Mi"
grep -qx "alloc $((4 * MiB)) ok" $XDIR/app.out || fail "the shim refused the last 4 MiB of 64Mi"
grep -qx "alloc 1 error 2" $XDIR/app.out || fail "one byte beyond 64Mi was not refused with CUDA_ERROR_OUT_OF_MEMORY"
[ -f "$(rec_file $c)" ] || fail "no record of the CDI createRuntime hook"
led
led_show
expect_node $cg max $((64 * MiB))
expect_node $cg min $((64 * MiB))
expect_node $cg current $((64 * MiB))
[ "$(led_holders $cg)" = $((64 * MiB)) ] || fail "the container's holders charge '$(led_holders $cg | tr '\n' ' ')', expected one of 64 MiB"

touch $XDIR/stop
wait $pmpid
rc=$?
info "podman run: exit $rc in $(since "$t0")"
sed 's/^/    | /' /tmp/pm.out
pm_settle
pm_cg_clean
[ $rc = 0 ] || fail "podman run exited $rc"
grep -qx freed $XDIR/app.out || fail "the program did not free: $(tail -n 1 $XDIR/app.out)"
[ ! -e "$(rec_file $c)" ] || fail "the spec's poststop hook left the record"
led
left=$(led_paths | grep -v '^/$' | tr '\n' ' ')
[ -z "$left" ] || { led_show; fail "after the container, the ledger ($NXQ_AUTHORITY) still has: $left"; }
[ "$(led_nholders)" = 0 ] || fail "holders left after the container"
[ "$(led_dev used)" = 0 ] || fail "device used $(led_dev used) after the container"
dev_unregister
exit 0
