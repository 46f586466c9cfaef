#!/bin/sh
# libnxquota-preload.so under LD_PRELOAD (app.c says what is checked), and
# tools/nxquota-run (--require: refused without an authority).
# Usage: app.sh PATH/libnxquota-preload.so
set -u
here=$(cd "$(dirname "$0")" && pwd)
so=$1
top=$(cd "$here/../.." && pwd)
fake=$top/tests/fakecuda	# the fake driver: two devices, as the shim's tests have
export FAKECUDA_DEVICES=2
err=$(mktemp /tmp/nxqp-app.XXXXXX)
trap 'rm -f "$err"' EXIT
rc=0
fail() { echo "app.sh: FAIL: $*"; rc=1; }

export LD_LIBRARY_PATH="$fake"
# no authority here: no module, no daemon
NXQUOTA_SOCKET=
export NXQUOTA_SOCKET
"$here/app" bare || fail "bare run"

# no authority: pass-through, said once
NXQ_DEV=/nonexistent LD_PRELOAD=$so "$here/app" preload 2>"$err" || fail "preloaded run"
n=$(grep -c "no nxquota authority" "$err")
[ "$n" = 1 ] || { cat "$err"; fail "the no-authority notice $n times, not once"; }

NXQ_PRELOAD=off LD_PRELOAD=$so "$here/app" preload 2>"$err" || fail "NXQ_PRELOAD=off run"
grep -q "NXQ_PRELOAD=off" "$err" || fail "NXQ_PRELOAD=off not said"

# nxquota-run sets the preload for one command
if [ -x "$top/tools/nxquota-run" ]; then
	NXQ_DEV=/nonexistent NXQ_PRELOAD_LIB=$so "$top/tools/nxquota-run" -- \
		"$here/app" preload 2>"$err" || { cat "$err"; fail "nxquota-run"; }
	"$top/tools/nxquota-run" 2>/dev/null && fail "nxquota-run without a command succeeded"
	# --require: no authority refuses (the allocation fails), said once
	NXQ_DEV=/nonexistent NXQ_PRELOAD_LIB=$so "$top/tools/nxquota-run" --require -- \
		"$here/app" preload >/dev/null 2>"$err" && fail "nxquota-run --require ran uncharged"
	n=$(grep -c "NXQUOTA_REQUIRE=1 and no nxquota authority" "$err")
	[ "$n" = 1 ] || { cat "$err"; fail "--require: the refusal said $n times, not once"; }
	if [ "$so" -ef "$top/preload/libnxquota-preload.so" ]; then
		# the in-tree shim, found next to the script
		NXQ_DEV=/nonexistent "$top/tools/nxquota-run" --wait 10 -- \
			"$here/app" preload 2>"$err" || { cat "$err"; fail "nxquota-run (in-tree)"; }
	fi
fi
# /etc/nxquota/require (what the CDI spec mounts read-only) requires the
# ledger whatever the environment says: NXQUOTA_REQUIRE=0 and env -i do
# not undo it.  In a mount namespace of its own, on a tmpfs over
# /etc/nxquota (made empty for it if there is none, and removed after), so
# that no other process on the host sees the file.
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
	made=
	[ -d /etc/nxquota ] || { mkdir /etc/nxquota && made=1; }
	NXQ_DEV=/nonexistent NXQUOTA_REQUIRE=0 unshare -m --propagation private sh -c '
		mount -t tmpfs -o size=64k nxq-test /etc/nxquota &&
		: > /etc/nxquota/require &&
		LD_PRELOAD=$1 "$2" preload' sh "$so" "$here/app" >/dev/null 2>"$err" &&
		fail "/etc/nxquota/require and NXQUOTA_REQUIRE=0: ran uncharged"
	n=$(grep -c "NXQUOTA_REQUIRE=1 and no nxquota authority" "$err")
	[ "$n" = 1 ] || { cat "$err"; fail "/etc/nxquota/require: the refusal said $n times, not once"; }
	[ -z "$made" ] || rmdir /etc/nxquota
else
	echo "app.sh: /etc/nxquota/require: skipped (needs root and unshare)"
fi
[ $rc = 0 ] && echo "app.sh: ok"
exit $rc
