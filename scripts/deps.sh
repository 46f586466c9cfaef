#!/bin/sh
# Install what the build and the tests need on a fresh Debian 12 machine,
# and fetch the two kernel images the real-kernel tests boot.
#
#   scripts/deps.sh            install packages (root) and fetch kernels
#   scripts/deps.sh --print    print "KVER VMLINUZ HEADERS" lines, one per kernel
#
# Kernels: Debian's newest 6.1 (linux-headers-amd64) and 6.12
# (linux-headers-6.12-amd64).  Images are unpacked under build/kernels/,
# never installed on the host.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
kdir="$top/build/kernels"

pkgs="build-essential make gcc pkg-config bc flex bison libelf-dev kmod cpio
gzip xz-utils python3 qemu-system-x86 busybox-static libcmocka-dev
libnl-3-dev libnl-genl-3-dev linux-headers-amd64 linux-headers-6.12-amd64
linux-source-6.12 sparse ccache dkms man-db groff-base python3-docutils
gnuplot-nox crun podman conmon golang-github-containers-common catatonit
libjson-c-dev"

missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done

if [ "${1:-}" != "--print" ] && [ -n "$missing" ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "deps: missing packages:$missing (run as root to install)" >&2
		exit 1
	fi
	echo "deps: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# The headers packages pin the exact kernel ABI; boot the image with the
# same version so that the module's vermagic matches.
headers_for() {	# $1 = meta package -> versioned headers package's kver
	dpkg-query -W -f='${Depends}' "$1" |
		sed -n 's/.*linux-headers-\([^ ,]*-amd64\).*/\1/p'
}

mkdir -p "$kdir"
for meta in linux-headers-amd64 linux-headers-6.12-amd64; do
	kver=$(headers_for "$meta")
	[ -n "$kver" ] || { echo "deps: cannot resolve $meta" >&2; exit 1; }
	img="$kdir/vmlinuz-$kver"
	if [ ! -s "$img" ]; then
		if [ -s "/boot/vmlinuz-$kver" ]; then
			cp "/boot/vmlinuz-$kver" "$img"
		else
			tmp=$(mktemp -d)
			(cd "$tmp" && apt-get download -qq "linux-image-$kver" >/dev/null 2>&1 ||
				apt-get download -qq "linux-image-$kver-unsigned" >/dev/null)
			dpkg-deb -x "$tmp"/*.deb "$tmp/x"
			cp "$tmp/x/boot/vmlinuz-$kver" "$img"
			rm -rf "$tmp"
		fi
	fi
	[ "${1:-}" = "--print" ] && echo "$kver $img /lib/modules/$kver/build"
done
exit 0
