#!/bin/sh
# Unpack Debian's linux-source-X.Y once under build/kunit/ and print the
# tree's path.  The tree stays pristine (builds go out of tree, O=): KUnit
# builds User Mode Linux from it, the style checks run its
# scripts/checkpatch.pl, and scripts/deps.sh prepares the trixie-backports
# kernels' module builds from it.
#
#   scripts/kernel-source.sh [X.Y]    default 6.12
#
# 6.12 comes from the linux-source-6.12 package (/usr/src); any other
# version from build/kernels/dl/linux-source-X.Y.tar.xz, which
# scripts/deps.sh fetches from trixie-backports.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
base="$top/build/kunit"
xy=${1:-6.12}
if [ "$xy" = 6.12 ]; then
	tarball=$(ls /usr/src/linux-source-6.12.tar.* 2>/dev/null | head -n 1)
	[ -n "$tarball" ] || { echo "linux-source-6.12 is not installed" >&2; exit 1; }
else
	tarball="$top/build/kernels/dl/linux-source-$xy.tar.xz"
	[ -s "$tarball" ] ||
		{ echo "no $tarball (scripts/deps.sh fetches it)" >&2; exit 1; }
fi
src="$base/$(basename "$tarball" | sed 's/\.tar\..*//')"
mkdir -p "$base"
if [ ! -f "$src/.nxq-unpacked" ] || [ "$tarball" -nt "$src/.nxq-unpacked" ]; then
	echo "unpacking $tarball" >&2
	rm -rf "$src"
	tar xf "$tarball" -C "$base"
	touch "$src/.nxq-unpacked"
fi
echo "$src"
