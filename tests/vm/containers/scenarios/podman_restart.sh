#!/bin/sh
# podman_restart: a container keeps what it holds, and its connection,
# across 20 restarts of nxquotad without socket activation (issue 29,
# item 1).  The container is the operator's: podman 4.3 with the CDI spec
# of `nxquotactl cdi generate` (the authority, the shim, the hooks) and
# --annotation nxquota.io/max=64Mi, min=64Mi.  In it:
#  - nxq-cuda-app, an unmodified CUDA program under the shim, holds 16 MiB
#    and, at each restart's step, allocates 1 MiB more or frees its last
#    allocation (`--steps`), on its connection restored;
#  - nxq-libholder, linked with libnxquota (an eventfd holder), holds
#    8 MiB;
#  - a shell starts a new nxq-cuda-app of 1 MiB (a new connection) at each
#    restart's step.
# Twenty times: nxquotad is killed (SIGKILL and SIGTERM in turn) and
# started again as a DaemonSet would (no socket activation: it binds a new
# socket).  After each start the ledger must equal, within 15 s, what the
# two holders hold -- the device's used, the container's node's current,
# and each holder's charge -- and then the step must succeed: the old
# process's allocation or free, and the new process's allocation.  The
# scenario prints a line per restart (the bytes held, the ledger's, those
# lost, the time to restore) and fails after three restarts that lose
# bytes or refuse an allocation.  At the end: no node, holder or charge.
# With the module as the authority there is no daemon to restart: SKIP.
# About 100 s under TCG on a loaded host (a podman run, 20 restarts):
# nxq-timeout: 300
. /containers/lib.sh
[ "$NXQ_AUTHORITY" = daemon ] || skip "about nxquotad's restarts (the daemon authority)"
need_nxq
[ -n "${NXQD_START:-}" ] && [ -n "${NXQD_PIDFILE:-}" ] ||
	fail "NXQD_START or NXQD_PIDFILE unset: init.sh says how it starts nxquotad"
RESTARTS=20

dev_register
x_fresh
mkdir -p $XDIR/steps
$NXQCTL cdi generate --output /etc/cdi/nxquota.json --hook $NXQ_HOOK --shim $SHIM \
	--preload-list $PRELOAD_LIST \
	> /tmp/cdi.out 2>&1 || fail "nxquotactl cdi generate failed: $(cat /tmp/cdi.out)"
sed 's/^/    cdi generate: /' /tmp/cdi.out
grep -A3 '"mounts"' /etc/cdi/nxquota.json | sed 's/^/    spec: /'

# The container: the two holders, then a new process per step until stop.
cat > $XDIR/ctr.sh <<EOF
/bin/nxq-libholder $KEY 8M > /x/lib.out 2>&1 &
lib=\$!
/bin/nxq-cuda-app --wait /x/stop --steps /x/steps 16M > /x/app.out 2>&1 &
app=\$!
i=1
while [ ! -e /x/stop ]; do
	if [ -e /x/new.\$i ]; then
		/bin/nxq-cuda-app 1M > /x/new.\$i.tmp 2>&1
		echo "exit \$?" >> /x/new.\$i.tmp
		mv /x/new.\$i.tmp /x/new.\$i.out
		i=\$((i + 1))
	else
		sleep 0.1
	fi
done
kill \$lib
wait \$app
EOF

cf=$(cidfile)
t0=$(now_cs)
podman run --rm --network none --cidfile "$cf" --device nxquota.io/gpu=$KEY \
	--annotation nxquota.io/max=64Mi --annotation nxquota.io/min=64Mi \
	-e NXQ_PRELOAD_BATCH=0 -v $XDIR:/x --rootfs "$CTR_ROOTFS" \
	/bin/sh /x/ctr.sh < /dev/null > /tmp/pm.out 2>&1 &
pmpid=$!
stop_ctr() {
	touch $XDIR/stop
	wait $pmpid
	pmrc=$?
	pm_settle
	pm_cg_clean
}
if ! wait_line $XDIR/app.out holding 90 || ! wait_line $XDIR/lib.out 'allocated\|failed' 30; then
	stop_ctr
	cat /tmp/pm.out
	fail "the holders in the podman container did not start: app: $(cat $XDIR/app.out 2>/dev/null); lib: $(cat $XDIR/lib.out 2>/dev/null)"
fi
info "podman run: the holders hold after $(since "$t0")"
c=$(cid "$cf")
[ -n "$c" ] || { stop_ctr; fail "podman wrote no --cidfile"; }
cg=/libpod_parent/libpod-$c
sed 's/^/    app: /' $XDIR/app.out
sed 's/^/    lib: /' $XDIR/lib.out
grep -qx "alloc $((16 * MiB)) ok" $XDIR/app.out || { stop_ctr; fail "the shim refused 16 MiB under min=max=64Mi"; }
lib=$(sed -n 's/^allocated [0-9]* charged \([0-9]*\)$/\1/p' $XDIR/lib.out)
[ -n "$lib" ] || { stop_ctr; fail "nxq-libholder got no 8 MiB: $(cat $XDIR/lib.out)"; }
app=$((16 * MiB))

# ledger_is: the ledger has exactly the two holders' bytes: the device's
# used and the node's current their sum, and one holder each with what it
# holds (one nxquotactl, one awk: each process costs under TCG); sets
# $used, and $got and $want (the device's used, the node's current, the
# holders' charges in order).
ledger_is() {
	if [ "$app" -lt "$lib" ]; then
		want="$((app + lib)) $((app + lib)) $app $lib"
	else
		want="$((app + lib)) $((app + lib)) $lib $app"
	fi
	led
	got=$(awk -v k="$KEY" -v p="$cg" '
		function field(s, name, i) {
			i = index(s, "\"" name "\":")
			if (!i)
				return "?"
			s = substr(s, i + length(name) + 3)
			sub(/[],}].*/, "", s)
			return s
		}
		function less(a, b) { return length(a) < length(b) || (length(a) == length(b) && a < b) }
		index($0, "\"key\":\"" k "\",") == 1 { used = field($0, "used") }
		index($0, "\"device\":\"" k "\",\"path\":\"" p "\",") == 1 { cur = field($0, "current") }
		index($0, "\"device\":\"" k "\",\"cgroup_id\":") == 1 && index($0, "\"path\":\"" p "\",\"pid\":") {
			h[n++] = field($0, "charge")
		}
		END {
			for (i = 0; i < n; i++)
				for (j = i + 1; j < n; j++)
					if (less(h[j], h[i])) { t = h[i]; h[i] = h[j]; h[j] = t }
			s = (used == "" ? "?" : used) " " (cur == "" ? "?" : cur)
			for (i = 0; i < n; i++)
				s = s " " h[i]
			print s
		}' /tmp/led.lines)
	used=${got%% *}
	[ "$got" = "$want" ]
}
ledger_is || { led_show; stop_ctr; fail "before any restart the ledger has used $used, the holders $((app + lib))"; }

i=1 bad=0 lost_each= why=
sig=KILL
while [ $i -le $RESTARTS ]; do
	nxqd_restart $sig
	was=$why
	# the ledger, once the holders have restored (15 s: the window is 5)
	until ledger_is || [ $(($(now_cs) - restart_cs)) -gt 1500 ]; do
		sleep 0.1
	done
	held=$((app + lib))
	case "$used" in *[!0-9]*|'') used=0 ;; esac
	lost=$((held - used))
	if [ "$got" = "$want" ]; then
		took=$(since "$restart_cs")
	else
		took="never"
		led_show
		info "restart $i: the ledger has '$got' (used, the node's current, each holder's charge), the holders hold '$want'"
		why="$why restart $i (SIG$sig): held $held, ledger $used, lost $lost;"
	fi
	lost_each="$lost_each $lost"
	# the step: the old process's next allocation (or free), a new process
	if [ $((i % 3)) = 0 ]; then w=free; else w=1M; fi
	echo $w > $XDIR/steps/.$i
	mv $XDIR/steps/.$i $XDIR/steps/$i
	touch $XDIR/new.$i
	wait_line $XDIR/app.out "^step $i done" 20 || { stop_ctr; fail "restart $i: nxq-cuda-app did not run step $i: $(tail -n 2 $XDIR/app.out)"; }
	l=$(grep "^step $i " $XDIR/app.out | head -n 1)
	case "$l" in
	"step $i alloc $MiB ok") app=$((app + MiB)); step=ok ;;
	"step $i free "*" ok") f=${l#"step $i free "}; app=$((app - ${f% ok})); step=ok ;;
	*) step="refused ($l)"; why="$why restart $i: $l;" ;;
	esac
	wait_line $XDIR/new.$i.out '^exit' 20 || { stop_ctr; fail "restart $i: the new process did not end"; }
	if grep -qx "alloc $MiB ok" $XDIR/new.$i.out; then
		new=ok
	else
		new="refused ($(head -n 1 $XDIR/new.$i.out))"
		why="$why restart $i: a new process: $(head -n 1 $XDIR/new.$i.out);"
	fi
	info "restart $i (SIG$sig): held $held, ledger $used, lost $lost, restored in $took; then: $w $step, new process $new"
	ledger_is || { led_show; why="$why after step $i: ledger $used, held $((app + lib));"; }
	[ "$why" = "$was" ] || bad=$((bad + 1))
	[ $bad -lt 3 ] || { stop_ctr; fail "bytes missing from the ledger after each of $i restarts:$lost_each;$why"; }
	if [ $sig = KILL ]; then sig=TERM; else sig=KILL; fi
	i=$((i + 1))
done
[ $bad = 0 ] || { stop_ctr; fail "bytes missing from the ledger after each of $RESTARTS restarts:$lost_each;$why"; }
info "bytes missing from the ledger after each of $RESTARTS restarts:$lost_each; every step and new process served; $(since "$t0") in all"

stop_ctr
sed 's/^/    | /' /tmp/pm.out
[ $pmrc = 0 ] || fail "podman run exited $pmrc"
grep -qx freed $XDIR/app.out || fail "nxq-cuda-app did not free: $(tail -n 1 $XDIR/app.out)"
[ ! -e "$(rec_file $c)" ] || fail "the spec's poststop hook left the record"
led
left=$(led_paths | grep -v '^/$' | tr '\n' ' ')
[ -z "$left" ] || { led_show; fail "after the container, the ledger still has: $left"; }
[ "$(led_nholders)" = 0 ] || fail "holders left after the container"
[ "$(led_dev used)" = 0 ] || fail "device used $(led_dev used) after the container"
dev_unregister
exit 0
