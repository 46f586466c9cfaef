#!/bin/sh
# crun_hooks: crun runs OCI bundles whose config.json carries createRuntime
# and poststop hooks and a linux.cgroupsPath in each of the layouts real
# stacks make on cgroup v2 (crun's cgroupfs manager creates the path):
#   kubelet+cgroupfs  /kubepods/burstable/pod<uid>/<ctr-id>
#   kubelet+systemd   /kubepods.slice/kubepods-burstable.slice/
#                     kubepods-burstable-pod<uid_>.slice/cri-containerd-<id>.scope
#   podman            /machine.slice/libpod-<id>.scope
#   Slurm             /system.slice/slurmstepd.scope/job_<id>/step_<n>
# For each: the createRuntime hook got the OCI state on stdin (id, the
# container's pid, status "created", the annotations) while that pid was
# already in the cgroup (its /proc/PID/cgroup); the hook ran in the host's
# cgroup, pid and mount namespaces; the container saw itself at "/" of its
# own cgroup namespace; the poststop hook ran after the process was gone;
# crun removed the container's cgroup.  The container has neither
# /dev/nxquota nor nxquotad's socket: nxq-probe in it reaches no authority;
# in the kubelet+cgroupfs one, an unmodified CUDA program under the shim
# with NXQUOTA_REQUIRE=1 (as the CDI spec sets it) is refused its
# allocation (fail closed: no ledger, no memory).
# (The test hook only: nxquota-hook's own scenarios are crun_pod,
# crun_systemd_kill, crun_refused, crun_lies, podman_*.)
. /containers/lib.sh

uid=$(poduid)
uid_=$(echo "$uid" | tr - _)
job=$((1000 + $(hexid 4 | od -An -tu2 | tr -d ' ') % 9000))

for layout in kube-cgroupfs kube-systemd podman slurm; do
	id=$(hexid)
	case $layout in
	kube-cgroupfs) cgp=/kubepods/burstable/pod$uid/$id ;;
	kube-systemd) cgp=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod$uid_.slice/cri-containerd-$id.scope ;;
	podman) cgp=/machine.slice/libpod-$id.scope ;;
	slurm) cgp=/system.slice/slurmstepd.scope/job_$job/step_0 ;;
	esac
	echo "--- $layout: $cgp"
	b=/run/bundles/$id
	shim='' app=''
	if [ $layout = kube-cgroupfs ] && [ -s $SHIM ] && [ -x $CTR_ROOTFS/bin/nxq-cuda-app ]; then
		shim="-B $SHIM:$SHIM -e LD_PRELOAD=$SHIM -e NXQUOTA_REQUIRE=1"
		app='; /bin/nxq-cuda-app 1M'
	fi
	# shellcheck disable=SC2086
	mk_bundle "$b" -c "$cgp" $shim \
		-a "nxq-test.io/max=4Gi" -a "nxq-test.io/layout=$layout" \
		-h createRuntime:createRuntime,crun -h poststop:poststop,crun \
		-- /bin/sh -c 'cat /proc/self/cgroup; echo ctr-pid=$$; /bin/nxq-probe; echo probe-rc=$?'"$app"
	crun_run "$id" "$b" /tmp/ctr.out || { cat /tmp/ctr.out; fail "$layout: crun run failed"; }
	sed 's/^/    ctr: /' /tmp/ctr.out

	expect_hook "$id" createRuntime crun
	show_hook "$f"
	[ "$(hook_get "$f" status)" = created ] ||
		fail "$layout: createRuntime state status '$(hook_get "$f" status)', expected created"
	pid=$(hook_get "$f" pid)
	case "$pid" in ''|none|0|*[!0-9]*) fail "$layout: createRuntime state has no pid ($pid)" ;; esac
	got=$(cg_of "$(hook_get "$f" cgroup)")
	[ "$got" = "$cgp" ] ||
		fail "$layout: container pid $pid in cgroup '$got' at createRuntime, expected $cgp"
	[ "$(hook_ann "$f" nxq-test.io/max)" = 4Gi ] ||
		fail "$layout: annotation nxq-test.io/max not in the state: $(hook_anns "$f" | tr '\n' ' ')"
	for n in cgroup pid mnt; do
		[ "$(hook_get "$f" ns_$n)" = host ] ||
			fail "$layout: createRuntime hook not in the host's $n namespace ($(hook_get "$f" ns_$n))"
	done
	grep -qx 'probe-rc=2' /tmp/ctr.out && grep -q '^nxq-probe: none:' /tmp/ctr.out ||
		fail "$layout: nxq-probe in a container given no authority: $(grep '^nxq-probe\|^probe-rc' /tmp/ctr.out | tr '\n' ' ')"
	[ -z "$app" ] || grep -qx 'alloc 1048576 error 2' /tmp/ctr.out ||
		fail "$layout: the shim with NXQUOTA_REQUIRE=1 and no authority let an allocation through: $(grep '^alloc' /tmp/ctr.out)"
	grep -q '^0::/$' /tmp/ctr.out ||
		fail "$layout: the container does not see itself at / of its cgroup namespace: $(head -n 1 /tmp/ctr.out)"

	expect_hook "$id" poststop crun
	show_hook "$f"
	[ "$(hook_get "$f" cgroup)" != "0::$cgp" ] ||
		fail "$layout: poststop ran while the container's process was alive"
	[ "$(hook_ann "$f" nxq-test.io/layout)" = "$layout" ] ||
		fail "$layout: annotation nxq-test.io/layout not in the poststop state"
	[ ! -d "$CG$cgp" ] || fail "$layout: crun left the container's cgroup $cgp"
	cg_rmtree "$(dirname "$cgp")"
done
exit 0
