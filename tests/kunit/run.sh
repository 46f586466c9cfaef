#!/bin/sh
# KUnit on User Mode Linux: unpack Debian's linux-source-6.12 once under
# build/kunit/, link kmod/ into it as drivers/misc/nxquota, and run the
# nxquota suite with kmod/.kunitconfig (KASAN and lockdep on).
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
base="$top/build/kunit"
src=$("$top/scripts/kernel-source.sh")

ln -sfn "$top/kmod" "$src/drivers/misc/nxquota"
grep -q 'nxquota/Kconfig' "$src/drivers/misc/Kconfig" ||
	echo 'source "drivers/misc/nxquota/Kconfig"' >> "$src/drivers/misc/Kconfig"
grep -q 'nxquota/' "$src/drivers/misc/Makefile" ||
	echo 'obj-$(CONFIG_NXQUOTA) += nxquota/' >> "$src/drivers/misc/Makefile"

cd "$src"
log="$base/kunit.log"
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
	--build_dir="$base/out" --jobs="$(nproc)" --timeout=300 \
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
	"$base/out/test.log" || true)
if [ -n "$splats" ]; then
	echo "$splats"
	echo "kunit: kernel log has a splat (see $base/out/test.log)"
	exit 1
fi
exit 0
