#!/bin/sh
# The module's style: checkpatch.pl from the kernel source (--no-tree -f)
# and sparse (make C=1) against the newest kernel's headers.  The version
# checks an out-of-tree module needs live in kmod/compat.h alone, so
# checkpatch's LINUX_VERSION_CODE warning is ignored.  Any
# checkpatch error or warning, or any sparse warning, fails.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
src=$("$top/scripts/kernel-source.sh")
cd "$top/kmod"
out=$(perl "$src/scripts/checkpatch.pl" --no-tree --quiet \
	--ignore FILE_PATH_CHANGES,SPDX_LICENSE_TAG,CONST_STRUCT,LINUX_VERSION_CODE \
	-f *.c *.h 2>&1) || true
if [ -n "$out" ]; then
	echo "$out"
	echo "checkpatch: not clean"
	exit 1
fi
echo "checkpatch: clean ($(ls *.c *.h | wc -l) files)"
kdir=$("$top/scripts/deps.sh" --print | tail -n 1 | cut -d' ' -f3)
tmp="$top/build/kmod/sparse"
rm -rf "$tmp" && mkdir -p "$tmp" && cp -f *.c *.h Kbuild "$tmp/"
sed -i "s|^nxq_src := .*|nxq_src := $top/kmod/|" "$tmp/Kbuild"
make -s -C "$kdir" M="$tmp" CONFIG_NXQUOTA=m C=2 modules >"$tmp/sparse.log" 2>&1 || {
	cat "$tmp/sparse.log"; exit 1; }
if grep -E 'warning|error' "$tmp/sparse.log"; then
	echo "sparse: not clean"
	exit 1
fi
echo "sparse: clean"
