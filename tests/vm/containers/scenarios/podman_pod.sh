#!/bin/sh
# podman_pod: podman 4.3's pods (cgroupfs manager) and nxquota-hook's pod
# budgets.  A container in a pod created with --infra=false has no pod
# cgroup (it is /libpod_parent/libpod-<id>, as outside a pod: podman makes a
# pod cgroup only for pods with an infra container), yet its OCI
# annotations say it is in a pod: io.kubernetes.cri-o.SandboxID=<pod id>
# (the infra container's id when the pod has one) and
# io.kubernetes.cri-o.ContainerType=container (the test hook, hooks.d,
# records them).  With the packaged hooks.d file installed, such a
# container asking nxquota.io/pod-max is refused: its parent
# /libpod_parent is shared by unrelated containers, no pod's; `podman run`
# fails (126), its output names the hook but not the hook's reason (crun
# gives hooks /dev/null as stderr, and under podman crun's own stderr is
# not shown either); the annotation run.oci.hooks.stderr=FILE makes crun
# append the hook's line to FILE; the ledger is as it was.
# (Pods with an infra container do get /libpod_parent/<pod id>, but podman
# 4.3.1 puts a deny-all eBPF device filter on it under cgroup v2, so no
# container can start there: README.md.)
. /containers/lib.sh
need_nxq

dev_register
rm -f /run/nxq-hook-stderr
cp /usr/share/nxquota/oci-hooks.json /etc/containers/oci/hooks.d/nxquota.json
led
before=$(led_budgets)
pm pod create --infra=false --name nxq-pod || fail "podman pod create failed"
pod=$(tail -n 1 /tmp/podman.out)
cf=$(cidfile)
pm_run --pod nxq-pod --cidfile "$cf" --annotation nxquota.io/pod-max=1Gi \
	--annotation run.oci.hooks.stderr=/run/nxq-hook-stderr -e NXQUOTA_DEVICES=$KEY \
	--rootfs "$CTR_ROOTFS" /bin/true
rc=$?
c=$(cid "$cf")
cp /tmp/podman.out /tmp/podman-run.out
pm pod rm -f nxq-pod || fail "podman pod rm failed"
pm_settle
pm_cg_clean
[ $rc = 126 ] || fail "podman run with nxquota.io/pod-max outside a pod cgroup: exit $rc, expected 126"
grep -q "error executing hook \`$NXQ_HOOK\` (exit code: 1)" /tmp/podman-run.out ||
	fail "podman's output does not say that $NXQ_HOOK failed"
[ -n "$c" ] || fail "podman wrote no --cidfile"
sed 's/^/    run.oci.hooks.stderr: /' /run/nxq-hook-stderr
grep -q "^nxquota-hook: container $c: the container's parent cgroup \"/libpod_parent\" is not a pod's" /run/nxq-hook-stderr ||
	fail "the hook's reason (parent /libpod_parent is not a pod's) is not in run.oci.hooks.stderr's file"
rm -f /run/nxq-hook-stderr
led
[ "$(led_budgets)" = "$before" ] || { led_show; fail "the ledger changed"; }
[ ! -e "$(rec_file $c)" ] || fail "a record was left"

expect_hook "$c" createRuntime hooksd
got=$(cg_of "$(hook_get "$f" cgroup)")
info "pod $pod: container $c in cgroup $got"
[ "$got" = "/libpod_parent/libpod-$c" ] ||
	fail "container of an infra-less pod in '$got', expected /libpod_parent/libpod-$c"
[ "$(hook_ann "$f" io.kubernetes.cri-o.SandboxID)" = "$pod" ] ||
	fail "annotation io.kubernetes.cri-o.SandboxID '$(hook_ann "$f" io.kubernetes.cri-o.SandboxID)', expected the pod id $pod"
[ "$(hook_ann "$f" io.kubernetes.cri-o.ContainerType)" = container ] ||
	fail "annotation io.kubernetes.cri-o.ContainerType '$(hook_ann "$f" io.kubernetes.cri-o.ContainerType)', expected container"
dev_unregister
exit 0
