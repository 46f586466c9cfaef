#!/bin/sh
# A kernel with the dmem cgroup controller, for make check-dmem.  Debian's
# images do not set CONFIG_CGROUP_DMEM, so this builds the newest kernel
# scripts/deps.sh lists from its source, with Debian's configuration and
# three changes: CONFIG_CGROUP_DMEM=y, no modules (the VM loads none but
# nxquota.ko), no debug information (the build's time).  It is built once,
# out of tree, in build/kernels/KVER-dmem/ (KDIR for the module), and its
# image is build/kernels/vmlinuz-KVER-dmem; the release is the Debian
# kernel's with "-dmem" appended.
#
#   scripts/dmem-kernel.sh            build it unless built
#   scripts/dmem-kernel.sh --print    the same, then print "KVER VMLINUZ KDIR"
#                                     (progress goes to stderr)
#
# The build takes long on a small machine (all of what Debian builds into
# the kernel); ccache, when present, makes a second build of the same
# source cheap.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
kdir="$top/build/kernels"
say() { echo "dmem-kernel: $*" >&2; }

# shellcheck disable=SC2046
set -- "${1:-}" $("$top/scripts/deps.sh" --print | tail -n 1)
base=${2:-}
[ -n "$base" ] || { say "scripts/deps.sh --print listed no kernel"; exit 1; }
cfg="$kdir/dl/config-$base"
[ -s "$cfg" ] || { say "no $cfg: the newest kernel is not one scripts/deps.sh prepares from source"; exit 1; }
xy=$(echo "$base" | cut -d. -f1,2)
kver="$base-dmem"
obj="$kdir/$kver"
img="$kdir/vmlinuz-$kver"

exec 9>"$kdir/.lock-dmem"
flock 9
if [ ! -f "$obj/.nxq-built" ] || [ ! -s "$img" ]; then
	src=$("$top/scripts/kernel-source.sh" "$xy")
	say "building $kver in $obj (Debian's $base configuration, CONFIG_CGROUP_DMEM=y, no modules)"
	rm -rf "$obj" "$img"
	mkdir -p "$obj"
	# Every module off, then the controller on.
	sed 's/^\(CONFIG_[A-Za-z0-9_]*\)=m$/# \1 is not set/' "$cfg" > "$obj/.config"
	sc="$src/scripts/config --file $obj/.config"
	$sc --enable CGROUP_DMEM \
		--enable DEBUG_INFO_NONE --disable DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT \
		--disable DEBUG_INFO_DWARF4 --disable DEBUG_INFO_DWARF5 \
		--disable DEBUG_INFO_BTF \
		--set-str SYSTEM_TRUSTED_KEYS "" --set-str SYSTEM_REVOCATION_KEYS "" \
		--set-str MODULE_SIG_KEY "certs/signing_key.pem"
	log="$obj/build.log"
	cc=gcc
	command -v ccache >/dev/null 2>&1 && cc="ccache gcc"
	export CCACHE_BASEDIR="$top" CCACHE_NOHASHDIR=1
	t0=$(date +%s)
	if ! make -C "$src" O="$obj" CC="$cc" olddefconfig > "$log" 2>&1 ||
	   ! grep -q '^CONFIG_CGROUP_DMEM=y' "$obj/.config" ||
	   ! make -C "$src" O="$obj" CC="$cc" KERNELRELEASE="$kver" -j"$(nproc)" \
			bzImage modules >> "$log" 2>&1; then
		tail -n 30 "$log" >&2
		say "the build failed (see $log)"
		exit 1
	fi
	cp "$obj/arch/x86/boot/bzImage" "$img"
	touch "$obj/.nxq-built"
	say "built $kver in $(($(date +%s) - t0))s"
fi
[ "$1" != --print ] || echo "$kver $img $obj"
