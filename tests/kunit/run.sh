#!/bin/sh
# KUnit on User Mode Linux: unpack a Debian kernel source once under
# build/kunit/, link kmod/ into it as drivers/misc/nxquota, and run the
# nxquota suite with kmod/.kunitconfig (KASAN and lockdep on).
#
#   tests/kunit/run.sh [--source X.Y|newest] [kunit.py options...]
#
# --source picks the tree: 6.12 (the default: Debian 12's linux-source-6.12),
# or a trixie-backports source scripts/deps.sh fetched; "newest" is the
# series of the newest kernel scripts/deps.sh lists.  Each source builds
# in its own directory, build/kunit/out (6.12) or build/kunit/out-X.Y, and
# logs to build/kunit/kunit.log or kunit-X.Y.log.
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
base="$top/build/kunit"
xy=6.12
if [ "${1:-}" = --source ]; then
	[ $# -ge 2 ] || { echo "kunit: --source needs a value" >&2; exit 2; }
	xy=$2
	shift 2
fi
if [ "$xy" = newest ]; then
	xy=$("$top/scripts/deps.sh" --print | tail -n 1 | cut -d' ' -f1 | cut -d. -f1,2)
	[ -n "$xy" ] || { echo "kunit: scripts/deps.sh --print listed no kernel" >&2; exit 1; }
fi
src=$("$top/scripts/kernel-source.sh" "$xy")
if [ "$xy" = 6.12 ]; then
	out="$base/out" log="$base/kunit.log"
else
	out="$base/out-$xy" log="$base/kunit-$xy.log"
fi
echo "kunit: linux-source-$xy"

ln -sfn "$top/kmod" "$src/drivers/misc/nxquota"
grep -q 'nxquota/Kconfig' "$src/drivers/misc/Kconfig" ||
	echo 'source "drivers/misc/nxquota/Kconfig"' >> "$src/drivers/misc/Kconfig"
grep -q 'nxquota/' "$src/drivers/misc/Makefile" ||
	echo 'obj-$(CONFIG_NXQUOTA) += nxquota/' >> "$src/drivers/misc/Makefile"

cd "$src"
# ccache, when present, makes a rebuild of the same tree on the same
# machine cheap; a fresh machine pays the whole build once either way.
# BASEDIR and NOHASHDIR let a clone in another folder hit the same cache.
cc_opt=
if command -v ccache >/dev/null 2>&1; then
	cc_opt="--make_options=CC=ccache gcc"
	export CCACHE_BASEDIR="$top" CCACHE_NOHASHDIR=1
fi
set +e
python3 tools/testing/kunit/kunit.py run --arch=um ${cc_opt:+"$cc_opt"} \
	--kunitconfig="$top/kmod/.kunitconfig" \
	--build_dir="$out" --jobs="$(nproc)" --timeout=300 \
	"$@" >"$log" 2>&1
rc=$?
set -e
# Show the results, not the build.
sed -n '/Starting KUnit Kernel/,$p' "$log"
if [ $rc -ne 0 ]; then
	grep -q 'Starting KUnit Kernel' "$log" || tail -n 40 "$log"
	echo "kunit: FAILED (full log: $log)"
	exit 1
fi
# A splat in the kernel log fails the run even if every case passed.
splats=$(grep -E 'BUG:|WARNING:|possible circular locking|KASAN|Call Trace|refcount_t' \
	"$out/test.log" || true)
if [ -n "$splats" ]; then
	echo "$splats"
	echo "kunit: kernel log has a splat (see $out/test.log)"
	exit 1
fi
exit 0
