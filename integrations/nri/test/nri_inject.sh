#!/bin/sh
# nri_inject: nxquota-nri's injection at CreateContainer and its
# Synchronize after a SIGKILL, with containerd 1.7 (Debian trixie's)
# driven as a kubelet would by nxq-cri (issue 28, item 1; not in make
# check: integrations/nri/test/run.sh nri_inject runs it).
#  - the operator's CDI spec (nxquotactl cdi generate, as podman_cdi
#    writes it) in /etc/cdi/nxquota.json, which containerd itself does not
#    read (enable_cdi = false): only the plugin brings its edits;
#  - c1, given the GPU by NVIDIA_VISIBLE_DEVICES and annotated
#    nxquota.io/max=min=64Mi: `nxquota-hook given` says it was given
#    <KEY>, and the plugin's CreateContainer gives it the spec's edits:
#    LD_PRELOAD, NXQUOTA_REQUIRE=1, NXQUOTA_DEVICE_<KEY>, the shim, the
#    authority (module: /dev/nxquota; nxquotad: its client socket's
#    directory and NXQUOTA_SOCKET), /etc/ld.so.preload and
#    /etc/nxquota/require, read-only;
#  - a process started by a CRI exec (ExecSync, as kubelet's) with an empty
#    environment (env -i) is charged all the same: 65 MiB refused past
#    64Mi, 1 MiB granted (without the injection: 65 MiB granted); the
#    require file cannot be removed inside;
#  - c3, in the same pod, given no nxquota GPU: no mount, no variable;
#  - c4, given the GPU while the spec is missing: CreateContainer is
#    refused, saying why (fail-closed, not uncharged);
#  - the plugin SIGKILLed while c1's program holds 64 MiB and restarted:
#    after its Synchronize the ledger (budgets and holders) and c1's record
#    are what they were; c5, started while the plugin was down (so no
#    StartContainer reached it), has its budget after the Synchronize;
#  - at the end no record, no holder, no node is left.
. /containers/lib.sh
need_nxq
. /nri/lib.sh
nri_need
SPEC=/etc/cdi/nxquota.json

# cx ID OUT ARGS...: ExecSync in container ID, stdout and stderr to OUT; rc
cx() {
	local id="$1" out="$2"
	shift 2
	nxq-cri exec "$id" "$@" > "$out" 2>&1
}

x_fresh
ctd_start

dev_register
cdi_spec
grep -q "\"name\": *\"$KEY\"" $SPEC || { cat $SPEC; fail "the spec has no device $KEY"; }
: > /tmp/nri.log
plugin_start /tmp/nri.log -cdi-spec $SPEC
info "nxquota-nri registered after $(since "$t0")"

uid=$(poduid)
pcg=/kubepods/burstable/pod$uid
pod=$(nxq-cri runp p1 $uid $pcg 2>/tmp/cri.err) || fail "RunPodSandbox: $(cat /tmp/cri.err)"

# ---- c1: given the GPU, with a budget --------------------------------------
ctr1=$(nxq-cri create $pod c1 localhost/nxq-app:1 -a nxquota.io/max=64Mi \
	-a nxquota.io/min=64Mi -e NVIDIA_VISIBLE_DEVICES=$KEY -e NXQ_PRELOAD_BATCH=0 \
	-m $XDIR:/x -- /bin/sh -c 'while [ ! -e /x/go ]; do sleep 0.1; done
		exec /bin/nxq-cuda-app --wait /x/stop 60M 4M 1 > /x/app.out 2>&1' \
	2>/tmp/cri.err) || fail "CreateContainer c1: $(cat /tmp/cri.err)"
grep -q "create $ctr1 (c1): given $KEY, budget true" /tmp/nri.log ||
	fail "the plugin's CreateContainer did not give c1 $KEY"
nxq-cri start $ctr1 2>/tmp/cri.err || fail "StartContainer c1: $(cat /tmp/cri.err)"
ccg=$pcg/$ctr1
led
expect_node $ccg max $((64 * MiB))
expect_node $ccg min $((64 * MiB))

# a clean environment, through the CRI's exec, is no way out
cx $ctr1 /tmp/c1.envi env -i /bin/nxq-cuda-app 65M 1M
sed 's/^/    exec env -i: /' /tmp/c1.envi
grep -qx "alloc $((65 * MiB)) error 2" /tmp/c1.envi ||
	fail "exec env -i: 65 MiB beyond the 64Mi budget was not refused: it ran uncharged"
grep -qx "alloc $((1 * MiB)) ok" /tmp/c1.envi ||
	fail "exec env -i: 1 MiB under the budget was refused (no authority reached?)"
cx $ctr1 /tmp/c1.env env || fail "exec env in c1: $(cat /tmp/c1.env)"
cx $ctr1 /tmp/c1.mounts cat /proc/self/mountinfo || fail "exec cat in c1: $(cat /tmp/c1.mounts)"
grep '^LD_PRELOAD=\|^NXQUOTA' /tmp/c1.env | sed 's/^/    c1 env: /'
grep ' /usr/lib/nxquota/\| /etc/ld.so.preload \| /etc/nxquota/\| /run/nxquota/' /tmp/c1.mounts |
	sed 's/^/    c1 mount: /'
grep -qx "LD_PRELOAD=$SHIM" /tmp/c1.env || fail "c1 has no LD_PRELOAD=$SHIM"
grep -qx 'NXQUOTA_REQUIRE=1' /tmp/c1.env || fail "c1 has no NXQUOTA_REQUIRE=1"
var=NXQUOTA_DEVICE_$(echo "$KEY" | tr 'a-z-' 'A-Z_')
grep -qx "$var=$KEY" /tmp/c1.env || fail "c1 has no $var=$KEY"
grep -q " $SHIM ro[ ,]" /tmp/c1.mounts || fail "the shim is not mounted read-only at $SHIM in c1"
grep -q " /etc/ld.so.preload ro[ ,]" /tmp/c1.mounts || fail "no read-only /etc/ld.so.preload in c1"
grep -q " /etc/nxquota/require ro[ ,]" /tmp/c1.mounts || fail "no read-only /etc/nxquota/require in c1"
if [ "$NXQ_AUTHORITY" = daemon ]; then
	grep -qx 'NXQUOTA_SOCKET=/run/nxquota/client/nxquota.sock' /tmp/c1.env || fail "c1 has no NXQUOTA_SOCKET"
	grep -q ' /run/nxquota/client ro[ ,]' /tmp/c1.mounts || fail "nxquotad's client directory is not in c1, read-only"
else
	cx $ctr1 /tmp/c1.dev stat -c '%F %t:%T' /dev/nxquota || fail "no /dev/nxquota in c1: $(cat /tmp/c1.dev)"
	[ "$(cat /tmp/c1.dev)" = "character special file $(stat -c '%t:%T' /dev/nxquota)" ] ||
		fail "c1's /dev/nxquota: $(cat /tmp/c1.dev)"
fi

if cx $ctr1 /tmp/c1.rm rm -f /etc/nxquota/require; then
	fail "c1 removed /etc/nxquota/require"
fi
cx $ctr1 /tmp/c1.req cat /etc/nxquota/require || fail "c1's /etc/nxquota/require is gone"
info "c1: rm /etc/nxquota/require refused: $(cat /tmp/c1.rm)"

# ---- c3: no nxquota GPU, nothing injected -----------------------------------
ctr3=$(nxq-cri create $pod c3 localhost/nxq-app:1 -- /bin/sh -c 'sleep 1000' \
	2>/tmp/cri.err) || fail "CreateContainer c3: $(cat /tmp/cri.err)"
nxq-cri start $ctr3 2>/tmp/cri.err || fail "StartContainer c3: $(cat /tmp/cri.err)"
cx $ctr3 /tmp/c3.env env || fail "exec env in c3: $(cat /tmp/c3.env)"
cx $ctr3 /tmp/c3.mounts cat /proc/self/mountinfo || fail "exec cat in c3"
! grep -q '^LD_PRELOAD=\|^NXQUOTA' /tmp/c3.env || fail "c3 (no GPU) got: $(grep '^LD_PRELOAD=\|^NXQUOTA' /tmp/c3.env)"
! grep -q ' /usr/lib/nxquota/\| /etc/ld.so.preload \| /etc/nxquota/\| /run/nxquota/' /tmp/c3.mounts ||
	fail "c3 (no GPU) got mounts: $(grep ' /usr/lib/nxquota/\| /etc/ld.so.preload \| /etc/nxquota/\| /run/nxquota/' /tmp/c3.mounts)"
! grep -q "create $ctr3 .*given" /tmp/nri.log || fail "the plugin injected into c3"
info "c3 (no nxquota GPU): nothing injected"

# ---- no spec: a container given a GPU is refused, not run uncharged ------------
mv $SPEC $SPEC.off
if nxq-cri create $pod c4 localhost/nxq-app:1 -e NVIDIA_VISIBLE_DEVICES=$KEY \
	-- /bin/sh -c 'sleep 1000' > /tmp/c4.id 2>/tmp/cri.err; then
	fail "c4 (given the GPU, no CDI spec) was created"
fi
grep -q "given $KEY: the CDI spec: open $SPEC: no such file" /tmp/cri.err ||
	fail "c4's refusal does not say why: $(cat /tmp/cri.err)"
mv $SPEC.off $SPEC
info "c4 (no CDI spec) refused: $(cat /tmp/cri.err)"

# ---- the plugin killed and restarted while c1 holds 64 MiB -----------------
ctr5=$(nxq-cri create $pod c5 localhost/nxq-app:1 -a nxquota.io/max=8Mi \
	-e NVIDIA_VISIBLE_DEVICES=$KEY -- /bin/sh -c 'sleep 1000' 2>/tmp/cri.err) ||
	fail "CreateContainer c5: $(cat /tmp/cri.err)"
touch $XDIR/go
wait_line $XDIR/app.out holding 60 || fail "c1's program did not get to 'holding': $(cat $XDIR/app.out 2>/dev/null)"
sed 's/^/    c1 app: /' $XDIR/app.out
grep -qx "alloc $((4 * MiB)) ok" $XDIR/app.out && grep -qx "alloc 1 error 2" $XDIR/app.out ||
	fail "c1's program was not bounded by 64Mi: $(cat $XDIR/app.out)"
led
[ "$(led_holders $ccg)" = $((64 * MiB)) ] || fail "c1's holders charge '$(led_holders $ccg | tr '\n' ' ')', expected one of 64 MiB"
before=$(led_budgets)
rec_before=$(cat "$(rec_file $ctr1)") || fail "no record of c1"
kill -9 $NRI_PID
wait $NRI_PID 2>/dev/null
NRI_PID=
info "nxquota-nri SIGKILLed"
nxq-cri start $ctr5 2>/tmp/cri.err || fail "StartContainer c5 (no plugin): $(cat /tmp/cri.err)"
led
[ -z "$(led_node $pcg/$ctr5 max)" ] || fail "c5 has a budget with no plugin running"
t1=$(now_cs)
: > /tmp/nri2.log
plugin_start /tmp/nri2.log -cdi-spec $SPEC
info "nxquota-nri registered again in $(since "$t1"): $(grep synchronized /tmp/nri2.log)"
led
expect_node $pcg/$ctr5 max $((8 * MiB))
c5node="{\"device\":\"[^\"]*\",\"path\":\"$pcg/$ctr5\",[^}]*}"
after=$(led_budgets | sed -e "s|,$c5node||" -e "s|$c5node,\?||")
# the ledger without c5's node, and c1's record: as they were
[ "$after" = "$before" ] || {
	echo "    before: $before"
	echo "    after:  $after"
	fail "the ledger differs after the plugin's restart"
}
[ "$(cat "$(rec_file $ctr1)")" = "$rec_before" ] || {
	echo "    before: $rec_before"
	echo "    after:  $(cat "$(rec_file $ctr1)")"
	fail "c1's record differs after the plugin's restart"
}
info "after the restart: 0 differences in the ledger and c1's record; c5 budgeted by Synchronize"

# ---- the end -------------------------------------------------------------------
touch $XDIR/stop
i=0
until [ "$(nxq-cri state $ctr1 2>/dev/null)" = CONTAINER_EXITED ]; do
	i=$((i + 1))
	[ $i -lt 300 ] || fail "c1 did not exit: $(cat $XDIR/app.out)"
	sleep 0.1
done
grep -qx freed $XDIR/app.out || fail "c1's program did not free: $(tail -n 1 $XDIR/app.out)"
for c in $ctr1 $ctr3 $ctr5; do
	nxq-cri stop $c 2>/tmp/cri.err || fail "StopContainer $c: $(cat /tmp/cri.err)"
	nxq-cri rm $c 2>/tmp/cri.err || fail "RemoveContainer $c: $(cat /tmp/cri.err)"
	[ ! -e "$(rec_file $c)" ] || fail "RemoveContainer left $c's record"
done
nxq-cri stopp $pod 2>/tmp/cri.err || fail "StopPodSandbox: $(cat /tmp/cri.err)"
nxq-cri rmp $pod 2>/tmp/cri.err || fail "RemovePodSandbox: $(cat /tmp/cri.err)"
cg_rmtree $pcg
led
left=$(led_paths | grep -v '^/$' | tr '\n' ' ')
[ -z "$left" ] || { led_show; fail "the ledger ($NXQ_AUTHORITY) still has: $left"; }
[ "$(led_nholders)" = 0 ] || fail "holders left after the containers"
sed 's/^/    nri: /' /tmp/nri.log
sed 's/^/    nri (restarted): /' /tmp/nri2.log
stop_all
dev_unregister
exit 0
