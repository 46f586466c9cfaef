#!/bin/sh
# podman_debian: podman as Debian 12 ships it, and the operator's first
# steps as README.md and nxquota-hook(8) give them (issue 28, item 3).
# No containers.conf here sets hooks_dir: Debian's own
# /usr/share/containers/containers.conf (from the host's
# golang-github-containers-common) and the VM's /etc one without its
# hooks_dir line, so podman uses containers/common's compiled-in default,
# /usr/share/containers/oci/hooks.d, and nothing else.
#  1. The packaged nxquota.json (@SBINDIR@ as /usr/bin) in
#     /etc/containers/oci/hooks.d only, where kubernetes.rst and
#     nxquota-hook(8) told operators to copy it before issue 28: podman
#     does not read it -- a container with nxquota.io/ annotations runs
#     with no hook: no record, no budget.
#  2. The same file where `make install PREFIX=/usr` puts it,
#     /usr/share/containers/oci/hooks.d: the hook runs at createRuntime
#     (max 48Mi, min 16Mi on /libpod_parent/libpod-<id>, its record) and
#     at poststop (record gone, no node left).
#  3. README.md's podman example, read from README.md (the sh block after
#     the marker "<!-- tested: podman_debian -->") and run as written,
#     with the packaged hooks.d file still in place as a PREFIX=/usr
#     install leaves it: `nxquotactl cdi generate --output ...` with its
#     defaults (the hook and the shim put where its defaults name them,
#     as make install would), then the podman line with GPU-<uuid> as the
#     registered device and "IMAGE ..." as the VM's rootfs running
#     nxq-cuda-app: the program under the shim gets 4 GiB (4 x 1024M, on
#     the fake driver's 8 GiB), one byte more is refused; afterwards no
#     record, no node, no holder.
#  4. The same line with the min annotation taken out (README's example
#     before issue 28): the program gets nothing, and the shim's line
#     names what is missing -- the min -- instead of "no budget".
. /containers/lib.sh
need_nxq
[ -f /containers/README.md ] || skip "no README.md in the VM (run.sh copies it)"
[ -f /usr/share/containers/containers.conf ] ||
	fail "no Debian containers.conf in the VM (run.sh copies the host's)"

# A failure stops the container it leaves running, as podman would, so
# that the sweep finds nothing of it.
pmpid= c=
fail() {
	echo "FAIL: $*"
	if [ -n "$pmpid" ]; then
		touch $XDIR/stop
		sleep 1
		kill $pmpid 2>/dev/null
		wait $pmpid
		pm_settle
	fi
	[ -z "$c" ] || podman rm -f "$c" > /dev/null 2>&1
	pm_cg_clean
	exit 1
}

PATH=/tools:$PATH	# nxquotactl as README.md calls it
export PATH
HD_USR=/usr/share/containers/oci/hooks.d
HD_ETC=/etc/containers/oci/hooks.d

# podman as shipped: no hooks_dir anywhere it reads its configuration.
sed -i '/^hooks_dir *=/d' /etc/containers/containers.conf
set -- $(grep -l '^[[:space:]]*hooks_dir' /usr/share/containers/containers.conf \
	/etc/containers/containers.conf /etc/containers/containers.conf.d/*.conf 2>/dev/null)
[ $# = 0 ] || fail "hooks_dir is still set in $*"
rm -f $HD_ETC/*.json $HD_USR/*.json

dev_register $KEY 8G
x_fresh

# run_ctr NAME ANNOTATIONS...: podman run with the annotations, a
# container that waits for /x/stop; sets $c, $cg; leaves it running.
run_ctr() {
	local name=$1 i=0
	shift
	rm -f $XDIR/started $XDIR/stop
	cf=$(cidfile)
	t0=$(now_cs)
	podman run --rm --cidfile "$cf" "$@" -e NVIDIA_VISIBLE_DEVICES=$KEY \
		-v $XDIR:/x --rootfs "$CTR_ROOTFS" \
		/bin/sh -c 'touch /x/started; while [ ! -e /x/stop ]; do sleep 0.1; done' \
		< /dev/null > /tmp/pm.out 2>&1 &
	pmpid=$!
	while [ ! -e $XDIR/started ] && [ $i -lt 900 ]; do sleep 0.1; i=$((i + 1)); done
	if [ ! -e $XDIR/started ]; then
		cat /tmp/pm.out
		fail "$name: the podman container did not start"
	fi
	info "$name: podman run: the container runs after $(since "$t0")"
	c=$(cid "$cf")
	[ -n "$c" ] || fail "$name: podman wrote no --cidfile"
	cg=/libpod_parent/libpod-$c
}
# stop_ctr NAME: stop it, wait for podman and its cleanup.
stop_ctr() {
	touch $XDIR/stop
	wait $pmpid
	rc=$?
	pmpid=
	info "$1: podman run: exit $rc in $(since "$t0")"
	sed 's/^/    | /' /tmp/pm.out
	pm_settle
	pm_cg_clean
	[ $rc = 0 ] || fail "$1: podman run exited $rc"
}
# nothing_left NAME: no record of $c, no node but the root.
nothing_left() {
	[ ! -e "$(rec_file $c)" ] || fail "$1: the record of $c is left"
	led
	left=$(led_paths | grep -v '^/$' | tr '\n' ' ')
	[ -z "$left" ] || { led_show; fail "$1: the ledger ($NXQ_AUTHORITY) still has: $left"; }
}

# ---- 1. /etc/containers/oci/hooks.d: not read --------------------------------
mkdir -p $HD_ETC
cp /usr/share/nxquota/oci-hooks.json $HD_ETC/nxquota.json
run_ctr etc --annotation nxquota.io/max=48Mi --annotation nxquota.io/min=16Mi
[ ! -e "$(rec_file $c)" ] ||
	fail "etc: nxquota-hook ran from $HD_ETC (podman read it after all)"
led
[ -z "$(led_node $cg max)" ] || { led_show; fail "etc: a budget on $cg without the hook"; }
info "etc: $HD_ETC/nxquota.json: no hook, no budget (podman does not read $HD_ETC)"
stop_ctr etc
nothing_left etc
rm -f $HD_ETC/nxquota.json

# ---- 2. /usr/share/containers/oci/hooks.d: where the package puts it ----------
mkdir -p $HD_USR
cp /usr/share/nxquota/oci-hooks.json $HD_USR/nxquota.json
run_ctr usr --annotation nxquota.io/max=48Mi --annotation nxquota.io/min=16Mi
[ -f "$(rec_file $c)" ] || fail "usr: nxquota-hook did not run from $HD_USR: no record"
led
led_show
expect_node $cg max $((48 * MiB))
expect_node $cg min $((16 * MiB))
stop_ctr usr
nothing_left usr

# ---- 3. README.md's podman example, as written ---------------------------------
awk '/^<!-- tested: podman_debian -->$/ { m = 1; next }
	m == 1 && /^```sh$/ { m = 2; next }
	m == 2 && /^```$/ { exit }
	m == 2 { print }' /containers/README.md > /tmp/readme.sh
sed 's/^/    README: /' /tmp/readme.sh
gen=$(grep '^nxquotactl cdi generate' /tmp/readme.sh)
run=$(grep '^podman run ' /tmp/readme.sh)
[ -n "$gen" ] && [ -n "$run" ] ||
	fail "README.md has no marked sh block with 'nxquotactl cdi generate' and 'podman run'"
case "$run" in
*"GPU-<uuid>"*" IMAGE ..."*) ;;
*) fail "README.md's podman line has no GPU-<uuid> and IMAGE ...: $run" ;;
esac
eval "$gen" > /tmp/cdi.out 2>&1 || fail "README: $gen: $(cat /tmp/cdi.out)"
sed 's/^/    cdi generate: /' /tmp/cdi.out
spec=$(echo "$gen" | sed -n 's/.*--output \([^ ]*\).*/\1/p')
# make install's step: the hook and the shim where the spec's defaults say.
hookp=$(sed -n 's/.*"path": *"\([^"]*nxquota-hook\)".*/\1/p' "$spec" | head -n 1)
shimp=$(sed -n 's/.*"hostPath": *"\([^"]*libnxquota-preload.so\)".*/\1/p' "$spec" | head -n 1)
[ -n "$hookp" ] && [ -n "$shimp" ] || { cat "$spec"; fail "README: the spec names no hook or no shim"; }
info "README: the spec's hook $hookp, shim $shimp"
installed=
# and the preload list, as make install writes it (preload/Makefile)
listp=$(awk -F'"' '$2 == "hostPath" { h = $4 }
	$2 == "containerPath" && $4 == "/etc/ld.so.preload" { print h; exit }' "$spec")
[ -n "$listp" ] || { cat "$spec"; fail "README: the spec mounts no /etc/ld.so.preload"; }
for p in "$hookp:$NXQ_HOOK" "$shimp:$SHIM" "$listp:$PRELOAD_LIST"; do
	[ -e "${p%%:*}" ] && continue
	mkdir -p "$(dirname "${p%%:*}")"
	cp "${p#*:}" "${p%%:*}"
	installed="$installed ${p%%:*}"
done

# readme_run TAG LINE APP-ARGS: the podman line with its placeholders
# filled in; the program's output in $XDIR/app.out.
readme_run() {
	local line
	rm -f $XDIR/app.out $XDIR/stop
	cf=$(cidfile)
	line=$(echo "$2" | sed "s|GPU-<uuid>|$KEY|; s| IMAGE \.\.\.\$| --cidfile $cf -e NXQ_PRELOAD_BATCH=0 -v $XDIR:/x --rootfs $CTR_ROOTFS /bin/sh -c 'exec /bin/nxq-cuda-app --wait /x/stop $3 > /x/app.out 2>\&1'|")
	info "$1: $line"
	t0=$(now_cs)
	eval "$line" < /dev/null > /tmp/pm.out 2>&1 &
	pmpid=$!
	if ! wait_line $XDIR/app.out holding 90; then
		cat /tmp/pm.out
		fail "$1: the program did not get to 'holding': $(cat $XDIR/app.out 2>/dev/null)"
	fi
	info "$1: the program holds after $(since "$t0")"
	c=$(cid "$cf")
	cg=/libpod_parent/libpod-$c
	sed 's/^/    app: /' $XDIR/app.out
}

G=$((1024 * MiB))
readme_run readme "$run" "1024M 1024M 1024M 1024M 1"
led
led_show
for i in 1 2 3 4; do
	[ "$(grep -c "^alloc $G ok\$" $XDIR/app.out)" -ge $i ] ||
		fail "README's example: the program got $((i - 1)) GiB of its 4 GiB (the shim refused the next 1024M)"
done
grep -qx "alloc 1 error 2" $XDIR/app.out ||
	fail "README's example: one byte beyond 4Gi was not refused with CUDA_ERROR_OUT_OF_MEMORY"
expect_node $cg current $((4 * G))
stop_ctr readme
pm rm "$c" || fail "readme: podman rm $c failed"	# the line has no --rm
nothing_left readme

# ---- 4. the same without its min: the shim names the missing min --------------
maxonly=$(echo "$run" | sed 's| --annotation nxquota\.io/min=[^ ]*||')
[ "$maxonly" != "$run" ] || fail "README's podman line has no nxquota.io/min annotation: $run"
readme_run maxonly "$maxonly" "1024M"
grep -qx "alloc $G error 2" $XDIR/app.out ||
	fail "max only: 1024M was not refused: $(cat $XDIR/app.out)"
said=$(grep -m1 'nxquota-preload\[[0-9]*\]: refused' $XDIR/app.out)
[ -n "$said" ] || fail "max only: the shim said nothing about the refusal"
case "$said" in
*"no budget"*) fail "max only: the shim says 'no budget' where the min is missing: $said" ;;
esac
case "$said" in
*"no min"*nxquota.io/min*) ;;
*) fail "max only: the shim's line does not name the missing min (nxquota.io/min): $said" ;;
esac
stop_ctr maxonly
pm rm "$c" || fail "maxonly: podman rm $c failed"
nothing_left maxonly

rm -f $installed $HD_USR/nxquota.json
dev_unregister $KEY
exit 0
