#!/bin/sh
# Install what the build and the tests need on a fresh Debian 12 machine,
# and fetch the kernels the real-kernel tests boot.
#
#   scripts/deps.sh            install packages (root), fetch and prepare
#                              every kernel
#   scripts/deps.sh --print    print "KVER VMLINUZ KDIR" lines, one per
#                              kernel, oldest first (fetching what is
#                              missing; progress goes to stderr)
#
# Kernels (nothing is installed into the host's boot path; everything
# lives under build/kernels/):
#   6.1, 6.12  Debian 12's newest (linux-headers-amd64,
#              linux-headers-6.12-amd64): headers installed by apt, KDIR
#              /lib/modules/KVER/build, the image unpacked from its .deb.
#   6.18, 7    the newest 6.18.x and the newest 7.x in trixie-backports.
#              Their headers packages need trixie's gcc-14 and glibc
#              (modpost links against glibc 2.38), so the module is built
#              against the kernel source instead (linux-source-X.Y of the
#              same upload), configured with the image's own .config and
#              prepared with this machine's gcc (olddefconfig, then
#              modules_prepare with the image's KERNELRELEASE) out of tree
#              in build/kernels/KVER/, which is KDIR; the headers package's
#              Module.symvers goes beside it.  olddefconfig may change
#              only what depends on the toolchain (the CC_/GCC_/AS_/LD_/
#              PAHOLE_ probes, Rust, which needs rustc); anything else is
#              an error, since the module must see the image's config.
#              The images do not set CONFIG_MODVERSIONS, so vermagic
#              (release, SMP, preempt, mod_unload) is what must match.
#
# NXQ_KERNELS limits both modes to some series: "6.12 7" (make check),
# "6.12" (make demo); unset or empty, all four (6.1 6.12 6.18 7).  A
# series matches a kernel whose release starts with it and a dot.
#
# Downloads are kept under build/kernels/dl/: a second run fetches nothing
# but trixie-backports' index, and that only when it changed on the mirror
# (curl -z); a newer upload in a series is fetched and prepared then.
# NXQ_DEBIAN_MIRROR overrides http://deb.debian.org/debian.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
kdir="$top/build/kernels"
dl="$kdir/dl"
mirror=${NXQ_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# The trixie-backports series we test: the newest image whose version
# starts with each of these.
bpo_series="6.18 7"
want=${NXQ_KERNELS:-6.1 6.12 $bpo_series}
# Whether NXQ_KERNELS asks for a series.
wanted() {	# series
	case " $want " in *" $1 "*) return 0 ;; esac
	return 1
}
print=0
[ "${1:-}" = "--print" ] && print=1

pkgs="build-essential make gcc pkg-config bc flex bison libelf-dev libssl-dev
kmod cpio gzip xz-utils curl python3 qemu-system-x86 busybox-static
libcmocka-dev libnl-3-dev libnl-genl-3-dev linux-headers-amd64
linux-headers-6.12-amd64 linux-source-6.12 sparse ccache dkms man-db
groff-base python3-docutils gnuplot-nox crun podman conmon
golang-github-containers-common catatonit libjson-c-dev mmdebstrap
python3-kubernetes libmicrohttpd-dev prometheus jq"

missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done

if [ $print = 0 ] && [ -n "$missing" ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "deps: missing packages:$missing (run as root to install)" >&2
		exit 1
	fi
	echo "deps: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

mkdir -p "$kdir" "$dl"
# One deps.sh at a time fetches and prepares (the test scripts call
# --print, possibly side by side).
exec 9>"$kdir/.lock"
flock 9
rm -rf "$dl"/tmp.*	# what an interrupted run left

say() { echo "deps: $*" >&2; }

# ---- Debian 12's kernels --------------------------------------------------

# The headers packages pin the exact kernel ABI; boot the image with the
# same version so that the module's vermagic matches.
headers_for() {	# $1 = meta package -> versioned headers package's kver
	dpkg-query -W -f='${Depends}' "$1" |
		sed -n 's/.*linux-headers-\([^ ,]*-amd64\).*/\1/p'
}

bookworm_kernel() {	# meta package
	local kver img tmp
	kver=$(headers_for "$1")
	[ -n "$kver" ] || { say "cannot resolve $1"; return 1; }
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
	[ $print = 0 ] || echo "$kver $img /lib/modules/$kver/build"
}

# ---- trixie-backports' kernels --------------------------------------------

idx="$dl/trixie-backports-Packages.xz"
tsv="$dl/trixie-backports-linux.tsv"	# Package Version Filename SHA256

# The index: refreshed when it changed on the mirror, except under --print
# with a copy at hand; a failed refresh keeps the copy.
fetch_index() {
	if [ -s "$idx" ] && [ $print = 1 ] && [ -s "$tsv" ]; then
		return 0
	fi
	local since= new=0
	[ ! -s "$idx" ] || since=$idx
	if ! curl -fsSL -R ${since:+-z "$since"} -o "$idx.new" \
			"$mirror/dists/trixie-backports/main/binary-amd64/Packages.xz"; then
		rm -f "$idx.new"
		[ -s "$idx" ] || { say "cannot fetch trixie-backports' index from $mirror"; return 1; }
		say "cannot refresh trixie-backports' index; using the copy from $(date -r "$idx" +%F)"
	elif [ -s "$idx.new" ]; then
		mv "$idx.new" "$idx"
		new=1
	else
		rm -f "$idx.new"	# not modified since
	fi
	[ $new = 0 ] && [ -s "$tsv" ] && return 0
	xz -dc "$idx" | awk '
		/^Package: /  { p = $2 }
		/^Version: /  { v = $2 }
		/^Filename: / { f = $2 }
		/^SHA256: /   { s = $2 }
		/^$/ { if (p ~ /^linux-/) print p, v, f, s; p = v = f = s = "" }
		END  { if (p ~ /^linux-/) print p, v, f, s }' > "$tsv.new"
	mv "$tsv.new" "$tsv"
}

# The newest image of a series: "KVER VERSION".
newest() {	# series
	local re
	re=$(echo "$1" | sed 's/\./\\./g')
	awk -v re="^linux-image-$re[.][0-9.]*[+]deb[0-9]+-amd64\$" \
		'$1 ~ re { sub(/^linux-image-/, "", $1); print $1, $2 }' "$tsv" |
		sort -V | tail -n 1
}

# Fetch a package of the upload into $4.  Listed in the index: its file,
# checked against its SHA256.  Not listed (Debian's index keeps the
# headers and the source of the newest upload only, the pool keeps all
# of an upload that is still in the suite): its pool path.
fetch_deb() {	# package version arch dest
	local f s url
	read -r f s <<-EOF
	$(awk -v p="$1" -v v="$2" '$1 == p && $2 == v { print $3, $4; exit }' "$tsv")
	EOF
	if [ -n "$f" ]; then
		url="$mirror/$f"
	else
		url="$mirror/pool/main/l/linux/$1_$(echo "$2" | sed 's/^[0-9]*://')_$3.deb"
	fi
	say "fetching $url"
	curl -fsSL -o "$4.part" "$url" || { rm -f "$4.part"; say "cannot fetch $url"; return 1; }
	if [ -n "$s" ] && ! echo "$s  $4.part" | sha256sum -c --quiet >/dev/null 2>&1; then
		rm -f "$4.part"
		say "$url: SHA256 differs from the index"
		return 1
	fi
	mv "$4.part" "$4"
}

# One file out of a .deb.
deb_file() {	# deb path-in-deb dest
	dpkg-deb --fsys-tarfile "$1" | tar -xO "./$2" > "$3.part" &&
		[ -s "$3.part" ] && mv "$3.part" "$3"
}

# Toolchain-dependent options olddefconfig may change: the compiler's,
# assembler's, linker's and pahole's versions and probes, Rust (no rustc
# here) and what depends on it, the build salt and signing keys.
toolchain_re='^CONFIG_(CC_|GCC_|AS_|LD_|LLD_|PAHOLE_|RUST|BINDGEN_|TOOLS_SUPPORT_|OPENSSL_|BUILD_SALT|MODULE_SIG_|SYSTEM_TRUSTED_KEYS|SYSTEM_REVOCATION_KEYS|DRM_PANIC_SCREEN_QR|[A-Z0-9_]*RUST)'

# Fetch and prepare one series; print its line.
bpo_kernel() {	# series
	local kver ver xy obj cfg src log bad f
	read -r kver ver <<-EOF
	$(newest "$1")
	EOF
	[ -n "$kver" ] || { say "no linux-image-$1.* in trixie-backports"; return 1; }
	xy=$(echo "$kver" | cut -d. -f1,2)
	obj="$kdir/$kver"
	cfg="$dl/config-$kver"
	if [ ! -f "$obj/.nxq-prepared" ] || [ "$(cat "$obj/.nxq-prepared")" != "$ver" ]; then
		local tmp="$dl/tmp.$$"
		rm -rf "$tmp"
		mkdir -p "$tmp"
		# The image: linux-binary-KVER since 6.19 (without the modules,
		# which the VM does not need), linux-image-KVER before; the file
		# is boot/vmlinuz-KVER or, since 7.2, usr/lib/modules/KVER/vmlinuz.
		if [ ! -s "$kdir/vmlinuz-$kver" ]; then
			if awk -v p="linux-binary-$kver" '$1 == p { f = 1 } END { exit !f }' "$tsv"; then
				fetch_deb "linux-binary-$kver" "$ver" amd64 "$tmp/img.deb"
			else
				fetch_deb "linux-image-$kver" "$ver" amd64 "$tmp/img.deb"
			fi || return 1
			f=$(dpkg-deb -c "$tmp/img.deb" | awk '{ print $NF }' |
				grep -Fx -e "./boot/vmlinuz-$kver" -e "./usr/lib/modules/$kver/vmlinuz" |
				head -n 1 | cut -c3-)
			[ -n "$f" ] && deb_file "$tmp/img.deb" "$f" "$kdir/vmlinuz-$kver" ||
				{ say "no vmlinuz in the package of $kver's image"; return 1; }
			rm -f "$tmp/img.deb"
		fi
		# Its build's .config and Module.symvers.
		if [ ! -s "$cfg" ] || [ ! -s "$dl/Module.symvers-$kver" ]; then
			fetch_deb "linux-headers-$kver" "$ver" amd64 "$tmp/hdr.deb" || return 1
			deb_file "$tmp/hdr.deb" "usr/src/linux-headers-$kver/.config" "$cfg" &&
				deb_file "$tmp/hdr.deb" "usr/src/linux-headers-$kver/Module.symvers" \
					"$dl/Module.symvers-$kver" ||
				{ say "no .config or Module.symvers in linux-headers-$kver"; return 1; }
			rm -f "$tmp/hdr.deb"
		fi
		# The source of the same upload.
		if [ ! -s "$dl/linux-source-$xy.tar.xz" ] ||
		   [ "$(cat "$dl/linux-source-$xy.version" 2>/dev/null)" != "$ver" ]; then
			fetch_deb "linux-source-$xy" "$ver" all "$tmp/src.deb" || return 1
			deb_file "$tmp/src.deb" "usr/src/linux-source-$xy.tar.xz" \
				"$dl/linux-source-$xy.tar.xz" ||
				{ say "no linux-source-$xy.tar.xz in linux-source-$xy"; return 1; }
			echo "$ver" > "$dl/linux-source-$xy.version"
			rm -f "$tmp/src.deb"
		fi
		rm -rf "$tmp"
		src=$("$top/scripts/kernel-source.sh" "$xy") || return 1

		say "preparing $kver (make olddefconfig modules_prepare in $obj)"
		rm -rf "$obj"
		mkdir -p "$obj"
		cp "$cfg" "$obj/.config"
		log="$obj/prepare.log"
		if ! make -C "$src" O="$obj" olddefconfig > "$log" 2>&1; then
			tail -n 20 "$log" >&2
			say "olddefconfig failed for $kver (see $log)"
			return 1
		fi
		grep '^CONFIG_' "$cfg" | sort > "$obj/config.image"
		grep '^CONFIG_' "$obj/.config" | sort > "$obj/config.here"
		# A module (=m) the image has and this toolchain cannot build
		# (Rust's) is no concern of the module's either.
		bad=$(diff "$obj/config.image" "$obj/config.here" |
			grep -v '^< CONFIG_[A-Z0-9_]*=m$' | sed -n 's/^[<>] //p' |
			grep -Ev "$toolchain_re|^CONFIG_NXQUOTA" || true)
		if [ -n "$bad" ]; then
			echo "$bad" | head -n 20 >&2
			say "$kver: olddefconfig changed options beyond the toolchain's (above)"
			return 1
		fi
		if ! make -C "$src" O="$obj" -j"$(nproc)" KERNELRELEASE="$kver" \
				modules_prepare >> "$log" 2>&1; then
			tail -n 20 "$log" >&2
			say "modules_prepare failed for $kver (see $log)"
			return 1
		fi
		cp "$dl/Module.symvers-$kver" "$obj/Module.symvers"
		[ "$(cat "$obj/include/config/kernel.release")" = "$kver" ] ||
			{ say "$obj: kernel.release is not $kver"; return 1; }
		echo "$ver" > "$obj/.nxq-prepared"
		# Earlier uploads of the series.
		for old in "$kdir/$1".*; do
			[ -d "$old" ] && [ "$old" != "$obj" ] || continue
			rm -rf "$old" "$kdir/vmlinuz-$(basename "$old")" \
				"$dl/config-$(basename "$old")" "$dl/Module.symvers-$(basename "$old")"
		done
	fi
	[ $print = 0 ] || echo "$kver $kdir/vmlinuz-$kver $obj"
}

for s in $want; do
	case " 6.1 6.12 $bpo_series " in
	*" $s "*) ;;
	*) say "NXQ_KERNELS: no series '$s' (6.1 6.12 $bpo_series)"; exit 1 ;;
	esac
done
failed=0
wanted 6.1 && { bookworm_kernel linux-headers-amd64 || failed=1; }
wanted 6.12 && { bookworm_kernel linux-headers-6.12-amd64 || failed=1; }
bpo=""
for s in $bpo_series; do
	wanted "$s" && bpo="$bpo $s"
done
if [ -n "$bpo" ]; then
	if fetch_index; then
		for s in $bpo; do
			bpo_kernel "$s" || failed=1
		done
	else
		failed=1
	fi
fi
exit $failed
