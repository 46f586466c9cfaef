#!/bin/sh
# image_node: the node image (make image) as a DaemonSet runs it, with
# podman on the VM's host (tests/vm/containers/run.sh --authority image:
# the VM runs no nxquotad and no module of its own).
#
#   podman load -i /image/nxquota.oci.tar        (what make image saved)
#   podman run -d --privileged --pid=host --cgroupns=host --network none
#       -v /run/nxquota -v /var/lib/nxquota -v /sys/fs/cgroup -v /etc/cdi
#       -v /opt/nxquota  (each the host's, at the same path, as the
#       DaemonSet's hostPath volumes)
#       -v <fake libcuda.so.1>:/usr/lib/x86_64-linux-gnu/libcuda.so.1:ro
#       localhost/nxquota:<version>               (its entrypoint: run)
#
# What must hold:
#  - the image put the static hook, the shim and the oci-hooks(5) file on
#    the host under /opt/nxquota, registered the fake driver's GPU
#    (devices sync, through the libcuda.so.1 given to it as the NVIDIA
#    toolkit gives the real one) and wrote /etc/cdi/nxquota.json naming
#    the host's hook and shim; its nxquotad serves /run/nxquota/client;
#  - a container started on the host with podman and that spec
#    (--device nxquota.io/gpu=<KEY>, min=max=64Mi) gets its budget from
#    the image's nxquotad: its unmodified CUDA program is charged 60 MiB
#    and 4 MiB, one byte more is refused (CUDA_ERROR_OUT_OF_MEMORY), and
#    the ledger the host's nxquotactl reads (through the control socket
#    the image made) has the node at 64 MiB;
#  - a restart of the image's container (podman restart: a DaemonSet pod
#    started again) keeps the 64 MiB in the ledger, and the program's
#    next allocation and free are served;
#  - after the program: the poststop hook cleared the budget and the
#    ledger has nothing of it; podman stop ends nxquotad with status 0;
#  - "install" without /opt/nxquota mounted fails and says so; "uninstall"
#    removes the host's files and the spec.
# nxq-timeout: 420
. /containers/lib.sh
[ -f /image/nxquota.oci.tar ] || skip "no /image/nxquota.oci.tar (make image)"
[ -x $NXQCTL ] || skip "no $NXQCTL (make -C tools static)"
[ -x $CTR_ROOTFS/bin/nxq-cuda-app ] || skip "no nxq-cuda-app in the container rootfs"
FAKECUDA=$CTR_ROOTFS/usr/lib/x86_64-linux-gnu/libcuda.so.1
[ -s $FAKECUDA ] || skip "no fake libcuda.so.1 (make -C tests/fakecuda)"
pidof nxquotad > /dev/null && fail "a nxquotad runs before the image: --authority image starts none"
[ -e /dev/nxquota ] && fail "/dev/nxquota exists: --authority image loads no module"

t0=$(now_cs)
pm load -i /image/nxquota.oci.tar || fail "podman load of the image's OCI archive failed"
tag=$(sed -n 's/^Loaded image[^:]*: *//p' /tmp/podman.out | head -n 1)
case $tag in
localhost/nxquota:*) ;;
*) fail "podman load named no localhost/nxquota:<version> image: '$tag'" ;;
esac
info "loaded $tag in $(since "$t0")"
ep=$(podman image inspect --format '{{json .Config.Entrypoint}} {{json .Config.Cmd}}' "$tag")
[ "$ep" = '["/usr/sbin/nxquota-node"] ["run"]' ] || fail "the image's entrypoint and command are '$ep'"

HOSTMOUNTS="-v /run/nxquota:/run/nxquota -v /var/lib/nxquota:/var/lib/nxquota
	-v /sys/fs/cgroup:/sys/fs/cgroup -v /etc/cdi:/etc/cdi -v /opt/nxquota:/opt/nxquota"
mkdir -p /run/nxquota /var/lib/nxquota /etc/cdi /opt/nxquota

# without the host's /opt/nxquota, install refuses (nothing would reach
# the host) and names what is missing
pm run --rm --network none "$tag" install && fail "install without /opt/nxquota mounted succeeded"
grep -q '/opt/nxquota is not mounted from the host' /tmp/podman.out ||
	fail "install without /opt/nxquota mounted did not say so"
pm_settle

node_logs() { podman logs nxquota-node 2>&1 | sed 's/^/    node: /'; }
stop_all() {
	[ -e $XDIR/stop ] || touch $XDIR/stop
	[ -n "${pmpid:-}" ] && wait $pmpid
	podman rm -f -t 5 nxquota-node > /dev/null 2>&1
	pm_settle
}

t0=$(now_cs)
# shellcheck disable=SC2086
pm run -d --name nxquota-node --privileged --pid=host --cgroupns=host --network none \
	$HOSTMOUNTS -v $FAKECUDA:/usr/lib/x86_64-linux-gnu/libcuda.so.1:ro "$tag" ||
	fail "podman run of the image failed"
i=0
until [ -s /etc/cdi/nxquota.json ] && podman logs nxquota-node 2>&1 | grep -q 'wrote the CDI spec'; do
	[ $i -lt 600 ] || { node_logs; stop_all; fail "the image wrote no CDI spec in 60 s"; }
	podman container exists nxquota-node && [ "$(podman inspect --format '{{.State.Running}}' nxquota-node)" = true ] ||
		{ node_logs; stop_all; fail "the image's container stopped"; }
	sleep 0.1
	i=$((i + 1))
done
info "the image serves and wrote the CDI spec $(since "$t0") after podman run"
node_logs

# what it put on the host
for f in /opt/nxquota/bin/nxquota-hook /opt/nxquota/lib/libnxquota-preload.so; do
	[ -x $f ] || { stop_all; fail "the image installed no $f on the host"; }
done
/opt/nxquota/bin/nxquota-hook --help > /tmp/hookhelp 2>&1
grep -q 'nxquota-hook' /tmp/hookhelp || { stop_all; fail "the installed hook does not run on the host: $(head -n 2 /tmp/hookhelp)"; }
grep -q '"path": *"/opt/nxquota/bin/nxquota-hook"' /opt/nxquota/share/oci-hooks.d/nxquota.json ||
	{ cat /opt/nxquota/share/oci-hooks.d/nxquota.json; stop_all; fail "the installed oci-hooks file does not name the host's hook"; }
[ -S /run/nxquota/client/nxquota.sock ] && [ -S /run/nxquota/control.sock ] ||
	{ ls -lR /run/nxquota; stop_all; fail "the image's nxquotad made no sockets in the host's /run/nxquota"; }
grep -q "\"name\": *\"$KEY\"" /etc/cdi/nxquota.json || { cat /etc/cdi/nxquota.json; stop_all; fail "the spec has no device $KEY (devices sync on the fake driver)"; }
grep -q '"path": *"/opt/nxquota/bin/nxquota-hook"' /etc/cdi/nxquota.json &&
	grep -q '"hostPath": *"/opt/nxquota/lib/libnxquota-preload.so"' /etc/cdi/nxquota.json ||
	{ cat /etc/cdi/nxquota.json; stop_all; fail "the spec does not name the host's hook and shim"; }
# the only nxquotad is the image's: in the image container's cgroup
nc=$(podman inspect --format '{{.Id}}' nxquota-node)
p=$(pidof nxquotad)
case "$p" in *' '*|'') stop_all; fail "nxquotad processes: '$p', expected one" ;; esac
grep -q "^0::/libpod_parent/libpod-$nc\$" /proc/$p/cgroup ||
	{ cat /proc/$p/cgroup; stop_all; fail "nxquotad ($p) is not the image container's"; }
led
[ "$(led_dev capacity)" = $((8192 * MiB)) ] || { cat /tmp/led.json; stop_all; fail "the fake GPU's capacity is '$(led_dev capacity)', expected the fake driver's 8 GiB"; }

# a container on the same host, through the spec the image wrote
x_fresh
mkdir -p $XDIR/steps
cf=$(cidfile)
t0=$(now_cs)
podman run --rm --network none --cidfile "$cf" --device nxquota.io/gpu=$KEY \
	--annotation nxquota.io/max=64Mi --annotation nxquota.io/min=64Mi \
	-e NXQ_PRELOAD_BATCH=0 -v $XDIR:/x --rootfs "$CTR_ROOTFS" \
	/bin/nxq-cuda-app --wait /x/stop --steps /x/steps 60M 4M 1 \
	< /dev/null > $XDIR/app.out 2>&1 &
pmpid=$!
wait_line $XDIR/app.out holding 90 || { cat $XDIR/app.out; stop_all; fail "the program did not get to 'holding'"; }
info "podman run: the program holds after $(since "$t0")"
sed 's/^/    app: /' $XDIR/app.out
c=$(cid "$cf")
cg=/libpod_parent/libpod-$c
grep -qx "alloc $((60 * MiB)) ok" $XDIR/app.out && grep -qx "alloc $((4 * MiB)) ok" $XDIR/app.out ||
	{ stop_all; fail "60 MiB and 4 MiB were not granted under min=max=64Mi"; }
grep -qx "alloc 1 error 2" $XDIR/app.out ||
	{ stop_all; fail "one byte past 64Mi was not refused with CUDA_ERROR_OUT_OF_MEMORY"; }
led
led_show
expect_node $cg max $((64 * MiB))
expect_node $cg min $((64 * MiB))
expect_node $cg current $((64 * MiB))

# the image's container started again, as a DaemonSet's pod would be
t0=$(now_cs)
pm restart -t 10 nxquota-node || { stop_all; fail "podman restart of the image failed"; }
i=0
until $NXQCTL devices > /dev/null 2>&1 && led && [ "$(led_node $cg current)" = $((64 * MiB)) ]; do
	[ $i -lt 150 ] || { led_show; node_logs; stop_all; fail "after a restart of the image the node has '$(led_node $cg current)', not 64 MiB"; }
	sleep 0.1
	i=$((i + 1))
done
info "the image restarted; the ledger has the container's 64 MiB again after $(since "$t0")"
echo free > $XDIR/steps/.1 && mv $XDIR/steps/.1 $XDIR/steps/1
wait_line $XDIR/app.out '^step 1 done' 20 || { stop_all; fail "no step 1 after the restart: $(tail -n 2 $XDIR/app.out)"; }
grep -qx "step 1 free $((4 * MiB)) ok" $XDIR/app.out || { stop_all; fail "after the restart: $(grep '^step 1' $XDIR/app.out)"; }
echo 2M > $XDIR/steps/.2 && mv $XDIR/steps/.2 $XDIR/steps/2
wait_line $XDIR/app.out '^step 2 done' 20 || { stop_all; fail "no step 2 after the restart: $(tail -n 2 $XDIR/app.out)"; }
grep -qx "step 2 alloc $((2 * MiB)) ok" $XDIR/app.out || { stop_all; fail "after the restart: $(grep '^step 2' $XDIR/app.out)"; }
led
expect_node $cg current $((62 * MiB))

touch $XDIR/stop
wait $pmpid
pmrc=$?
pmpid=
pm_settle
grep -qx freed $XDIR/app.out || { stop_all; fail "the program did not free: $(tail -n 1 $XDIR/app.out)"; }
[ $pmrc = 0 ] || { stop_all; fail "the program's podman run exited $pmrc"; }
[ ! -e "$(rec_file $c)" ] || { stop_all; fail "the spec's poststop hook left its record"; }
led
left=$(led_paths | grep -v '^/$' | tr '\n' ' ')
[ -z "$left" ] || { led_show; stop_all; fail "after the container, the ledger still has: $left"; }
[ "$(led_dev used)" = 0 ] || { stop_all; fail "device used $(led_dev used) after the container"; }

pm stop -t 10 nxquota-node || { stop_all; fail "podman stop of the image failed"; }
st=$(podman inspect --format '{{.State.ExitCode}}' nxquota-node)
node_logs
[ "$st" = 0 ] || { stop_all; fail "the image's container exited with $st on SIGTERM"; }
podman logs nxquota-node 2>&1 | grep -q 'nxquotad exited with status 0' ||
	{ stop_all; fail "the entrypoint did not pass on nxquotad's exit"; }
pm rm nxquota-node || fail "podman rm nxquota-node failed"
pm_settle

pm run --rm --network none -v /opt/nxquota:/opt/nxquota -v /etc/cdi:/etc/cdi "$tag" uninstall ||
	fail "uninstall failed"
pm_settle
for f in /opt/nxquota/bin/nxquota-hook /opt/nxquota/lib/libnxquota-preload.so \
		/opt/nxquota/share/oci-hooks.d/nxquota.json /etc/cdi/nxquota.json; do
	[ ! -e $f ] || fail "uninstall left $f"
done
pm rmi "$tag" > /dev/null || fail "podman rmi $tag failed"
pm_cg_clean
exit 0
