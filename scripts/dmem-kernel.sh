#!/bin/sh
# A kernel with the dmem cgroup controller, for make check-dmem.  Debian's
# images do not set CONFIG_CGROUP_DMEM (none of 6.16 to 7.3 in
# trixie-backports does), so this builds the newest kernel scripts/deps.sh
# lists from the same source (linux-source-X.Y of the same upload), in a
# small configuration: tinyconfig, then what the test VM and the scenarios
# use (tests/vm/dmem.config), CONFIG_CGROUP_DMEM among it.  Debian's own
# configuration with only its modules turned off was tried first: on this
# project's 2-core machine its built-in part compiled at 6 to 50 objects a
# minute beside the other tests, over an hour; the small one is a few
# minutes of compiling.  The VM loads no module but nxquota.ko, so nothing
# the Debian image has as a module is missed.
#
# It is built once, out of tree, in build/kernels/KVER-dmem/ (the KDIR the
# module builds against), its image is build/kernels/vmlinuz-KVER-dmem, and
# its release is the Debian kernel's with "-dmem" appended.
#
#   scripts/dmem-kernel.sh            build it unless built
#   scripts/dmem-kernel.sh --print    the same, then print "KVER VMLINUZ KDIR"
#                                     (progress goes to stderr)
#
# ccache, when present, makes a second build of the same source cheap.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
kdir="$top/build/kernels"
frag="$top/tests/vm/dmem.config"
say() { echo "dmem-kernel: $*" >&2; }

# shellcheck disable=SC2046
set -- "${1:-}" $("$top/scripts/deps.sh" --print | tail -n 1)
base=${2:-}
[ -n "$base" ] || { say "scripts/deps.sh --print listed no kernel"; exit 1; }
[ -s "$kdir/dl/config-$base" ] ||
	{ say "the newest kernel, $base, is not one scripts/deps.sh fetches the source of"; exit 1; }
xy=$(echo "$base" | cut -d. -f1,2)
kver="$base-dmem"
obj="$kdir/$kver"
img="$kdir/vmlinuz-$kver"
# What was built: the source's upload and the fragment.
stamp="$(cat "$kdir/dl/linux-source-$xy.version") $(cksum < "$frag")"

exec 9>"$kdir/.lock-dmem"
flock 9
if [ "$(cat "$obj/.nxq-built" 2>/dev/null)" != "$stamp" ] || [ ! -s "$img" ]; then
	src=$("$top/scripts/kernel-source.sh" "$xy")
	say "building $kver in $obj (tinyconfig + tests/vm/dmem.config)"
	# Reconfigured in place: kbuild rebuilds only what a changed option
	# reaches (a new line in the fragment costs minutes, not the hour of
	# a first build, which ccache cannot shorten: every object includes
	# the generated autoconf.h).
	rm -f "$img" "$obj/.nxq-built"
	mkdir -p "$obj"
	log="$obj/build.log"
	cc=gcc
	command -v ccache >/dev/null 2>&1 && cc="ccache gcc"
	export CCACHE_BASEDIR="$top" CCACHE_NOHASHDIR=1
	t0=$(date +%s)
	if ! make -C "$src" O="$obj" CC="$cc" tinyconfig > "$log" 2>&1 ||
	   ! (cd "$obj" && "$src/scripts/kconfig/merge_config.sh" -m .config "$frag") >> "$log" 2>&1 ||
	   ! make -C "$src" O="$obj" CC="$cc" olddefconfig >> "$log" 2>&1; then
		tail -n 30 "$log" >&2
		say "configuring failed (see $log)"
		exit 1
	fi
	# Every line of the fragment must have survived olddefconfig.
	missing=$(grep '^CONFIG_' "$frag" | while read -r l; do
		grep -qx "$l" "$obj/.config" || echo "$l"; done)
	if [ -n "$missing" ]; then
		echo "$missing" >&2
		say "olddefconfig dropped the options above (a missing dependency in $frag)"
		exit 1
	fi
	if ! make -C "$src" O="$obj" CC="$cc" KERNELRELEASE="$kver" -j"$(nproc)" \
			bzImage modules >> "$log" 2>&1; then
		tail -n 30 "$log" >&2
		say "the build failed (see $log)"
		exit 1
	fi
	[ "$(cat "$obj/include/config/kernel.release")" = "$kver" ] ||
		{ say "$obj: kernel.release is not $kver"; exit 1; }
	cp "$obj/arch/x86/boot/bzImage" "$img"
	echo "$stamp" > "$obj/.nxq-built"
	say "built $kver in $(($(date +%s) - t0))s"
fi
[ "$1" != --print ] || echo "$kver $img $obj"
