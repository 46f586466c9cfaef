# integrations/nri/test/nri_lib.sh - what the nri_* scenarios share, at
# /nri/lib.sh in the VM (run.sh adds it); sourced after /containers/lib.sh.
#   nri_need               skip without containerd, its shim, ctr, the plugin, nxq-cri
#   ctd_start [CONFIG]     containerd (default /nri/containerd.toml), answering,
#                          with the pause and app images imported; t0 its start
#   plugin_start LOG [ARGS...]  nxquota-nri -hook $NXQ_HOOK ARGS, appending to
#                          LOG, registered (its Synchronize done)
#   stop_all               the plugin, containerd, the shims, their mounts, the
#                          kubepods cgroups; then nri_stop_more, if defined
#   fail TEXT              FAIL with containerd's and the plugin's last lines
CTD_PID= NRI_PID=
# the long scenarios' sizes (run.sh writes them from NXQ_NRI_*)
[ ! -f /nri/env ] || . /nri/env

nri_need() {
	for b in containerd containerd-shim-runc-v2 ctr nxquota-nri nxq-cri; do
		[ -x /usr/bin/$b ] || skip "no /usr/bin/$b (integrations/nri/test/run.sh adds it)"
	done
}

stop_all() {
	[ -z "$NRI_PID" ] || { kill $NRI_PID 2>/dev/null; wait $NRI_PID 2>/dev/null; }
	if [ -n "$CTD_PID" ]; then
		kill $CTD_PID 2>/dev/null
		wait $CTD_PID 2>/dev/null
	fi
	# the shims outlive containerd by design: end them (ours only)
	for p in /proc/[0-9]*; do
		read -r c 2>/dev/null < "$p/comm" || continue
		case "$c" in containerd-shim*) kill -9 "${p#/proc/}" 2>/dev/null ;; esac
	done
	sleep 0.5
	grep ' /run/containerd/\| /var/lib/containerd/' /proc/mounts | cut -d' ' -f2 |
		sort -r | while read -r m; do umount "$m" 2>/dev/null; done
	for c in $(find $CG/kubepods $CG/kubepods.slice -depth -type d 2>/dev/null); do
		rmdir "$c" 2>/dev/null
	done
	! command -v nri_stop_more > /dev/null 2>&1 || nri_stop_more
}

fail() {
	echo "FAIL: $*"
	sed 's/^/    containerd: /' /tmp/containerd.log 2>/dev/null | tail -n 30
	sed 's/^/    nri: /' /tmp/nri.log 2>/dev/null | tail -n 30
	stop_all
	exit 1
}

ctd_start() {
	mkdir -p /var/lib/containerd /run/containerd /run/nxq-cri /var/run/nri /etc/nri/conf.d
	t0=$(now_cs)
	containerd --config "${1:-/nri/containerd.toml}" > /tmp/containerd.log 2>&1 &
	CTD_PID=$!
	i=0
	while ! ctr version > /dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 600 ] || fail "containerd did not answer within 60 s"
		kill -0 $CTD_PID 2>/dev/null || fail "containerd exited"
		sleep 0.1
	done
	for img in pause app; do
		ctr -n k8s.io images import --snapshotter native /nri/$img.tar > /tmp/ctr.out 2>&1 ||
			fail "ctr images import $img: $(cat /tmp/ctr.out)"
	done
	info "containerd up, images imported after $(since "$t0")"
}

# cdi_spec: the operator's CDI spec for the devices registered so far,
# written where the plugin's -cdi-spec reads it by default
cdi_spec() {
	$NXQCTL cdi generate --output /etc/cdi/nxquota.json --hook $NXQ_HOOK --shim $SHIM \
		--preload-list $PRELOAD_LIST > /tmp/cdi.out 2>&1 ||
		fail "nxquotactl cdi generate failed: $(cat /tmp/cdi.out)"
}

plugin_start() {
	local log=$1
	shift
	nxquota-nri -hook $NXQ_HOOK "$@" >> "$log" 2>&1 &
	NRI_PID=$!
	wait_line "$log" synchronized 30 || fail "nxquota-nri did not register: $(cat "$log")"
}
