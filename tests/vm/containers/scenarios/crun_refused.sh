#!/bin/sh
# crun_refused: annotations nxquota-hook refuses.  Each bundle has the hook
# in config.json and is given $KEY by NXQUOTA_DEVICES; for each case `crun
# run` fails, crun's stderr carries the hook's one line "nxquota-hook:
# container <id>: ..." naming what was wrong, crun removed the container
# and its cgroup, no record is left and the ledger's budgets are exactly
# what they were (a budget already on the pod's cgroup is neither changed
# nor dropped).  Cases:
#   garbage    nxquota.io/max=lots                (not a quantity); once
#              without run.oci.hooks.stderr: crun drops the hook's line
#              (must_refuse in lib.sh)
#   minmax     nxquota.io/max=1Mi nxquota.io/min=2Mi
#   notgiven   nxquota.io/max.<KEY2>=1Mi          (registered, not given)
#   nogpu      nxquota.io/max=1Mi, no GPU given at all
#   unknown    nxquota.io/gpu.max=4Gi             (no such key)
#   nopod      nxquota.io/pod-max=1Mi outside a pod
#   podclash   nxquota.io/pod-max=32Mi in a pod whose budget is already
#              64M (set by the operator, or by a sibling with other values)
#   refusedby  in a pod without a budget: a valid pod budget, then a
#              container min the authority refuses (above the device's
#              capacity): the pod's budget set by this run is taken back
. /containers/lib.sh
need_nxq

dev_register
dev_register $KEY2 1G
uid=$(poduid)
pod=/kubepods/besteffort/pod$uid
mkdir -p $CG$pod
# a budget already on the pod: the refused runs must leave it as it is
ctl set $pod $KEY max=64M
led
before=$(led_budgets)

pann="-a io.kubernetes.pod.uid=$uid -a io.kubernetes.cri.sandbox-id=$(hexid)"
# crun's default: the hook's stderr goes to /dev/null, only crun's own
# "error executing hook" line is left; the hook's line is in syslog
# (busybox syslogd here, the journal on a node)
rm -f /tmp/syslog
syslogd -O /tmp/syslog || fail "busybox syslogd did not start"
HOOKS_STDERR=off must_refuse default-stderr '' $pod -e NXQUOTA_DEVICES=$KEY -a nxquota.io/max=lots
i=0
until grep -q 'nxquota-hook\[[0-9]*\]: container [0-9a-f]*: .*"lots"' /tmp/syslog 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 20 ] || { cat /tmp/syslog; fail "the hook's refusal is not in syslog"; }
	sleep 0.1
done
info "syslog: $(grep nxquota-hook /tmp/syslog | tail -1)"
killall syslogd
must_refuse garbage '"lots"' $pod -e NXQUOTA_DEVICES=$KEY -a nxquota.io/max=lots
must_refuse minmax 'min' $pod -e NXQUOTA_DEVICES=$KEY -a nxquota.io/max=1Mi -a nxquota.io/min=2Mi
must_refuse notgiven "${KEY2#GPU-}" $pod -e NXQUOTA_DEVICES=$KEY -a nxquota.io/max.$KEY2=1Mi
must_refuse nogpu 'no GPU' $pod -a nxquota.io/max=1Mi
must_refuse unknown 'nxquota.io/gpu.max' $pod -e NXQUOTA_DEVICES=$KEY -a nxquota.io/gpu.max=4Gi
must_refuse nopod 'not in a pod' /nxq-nopod -e NXQUOTA_DEVICES=$KEY -a nxquota.io/pod-max=1Mi
# shellcheck disable=SC2086
must_refuse podclash 'already' $pod -e NXQUOTA_DEVICES=$KEY $pann -a nxquota.io/pod-max=32Mi
uid2=$(poduid)
pod2=/kubepods/besteffort/pod$uid2
must_refuse refusedby 'refused' $pod2 -e NXQUOTA_DEVICES=$KEY -a io.kubernetes.pod.uid=$uid2 \
	-a io.kubernetes.cri.sandbox-id=$(hexid) -a nxquota.io/pod-max=32Mi -a nxquota.io/min=2Gi
rmdir $CG/nxq-nopod 2>/dev/null

cg_rmtree $pod2
cg_rmtree $pod
led
left=$(led_paths | grep -v '^/$' | tr '\n' ' ')
[ -z "$left" ] || { led_show; fail "cgroups removed, but the ledger ($NXQ_AUTHORITY) still has: $left"; }
dev_unregister $KEY2
dev_unregister
exit 0
