#!/bin/sh
# Unpack Debian's linux-source-6.12 once under build/kunit/ and print the
# tree's path.  Used by KUnit (UML build) and by the style checks
# (scripts/checkpatch.pl).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
base="$top/build/kunit"
tarball=$(ls /usr/src/linux-source-6.12.tar.* 2>/dev/null | head -n 1)
[ -n "$tarball" ] || { echo "linux-source-6.12 is not installed" >&2; exit 1; }
src="$base/$(basename "$tarball" | sed 's/\.tar\..*//')"
mkdir -p "$base"
if [ ! -f "$src/.nxq-unpacked" ] || [ "$tarball" -nt "$src/.nxq-unpacked" ]; then
	echo "unpacking $tarball" >&2
	rm -rf "$src"
	tar xf "$tarball" -C "$base"
	touch "$src/.nxq-unpacked"
fi
echo "$src"
