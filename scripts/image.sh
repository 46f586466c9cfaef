#!/bin/sh
# scripts/image.sh - build nxquota's node image (make image) from this
# tree and Debian's packages, with no registry:
#
#   1. build what make install installs (make lib tools, the daemon's
#      release build), nxquota-hook linked statically (make -C tools
#      static: it is copied onto hosts whose libraries are not the
#      image's) and the shim;
#   2. mmdebstrap --variant=extract: Debian 12's busybox, libc6,
#      libgcc-s1, libjson-c5, libnl-3-200, libnl-genl-3-200 and
#      libmicrohttpd12 (nxquotad's /metrics; with libgnutls30), unpacked
#      (no maintainer scripts: nothing in the image runs dpkg) into
#      build/image/rootfs, from Debian's archive (bookworm, its updates
#      and its security archive; NXQ_DEBIAN_MIRROR and NXQ_DEBIAN_SECURITY
#      name other mirrors, as in scripts/deps.sh);
#   3. make install DESTDIR=build/image/rootfs PREFIX=/usr, busybox's
#      applets as links, ldconfig for the root, the entrypoint
#      (packaging/image/nxquota-node) and, under /usr/lib/nxquota/host,
#      what the entrypoint copies onto the host: the static hook, the shim
#      and the NRI plugin where integrations/nri/build.sh built it
#      (build/nri/bin/nxquota-nri);
#   4. build/image/nxquota-<version>.tar: the root, reproducible (sorted,
#      numeric owners, one mtime);
#   5. where podman is installed: podman import of that tar as
#      localhost/nxquota:<version>, with the entrypoint, and podman save
#      of it as build/image/nxquota-<version>.oci.tar (an OCI archive that
#      containerd's "ctr images import" and skopeo read).
#
# It prints the image's size and how long each step took.  Root is needed
# (mmdebstrap's root mode; podman's storage).  Exit 0 built, 1 not.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
version=$(cat VERSION)
out=build/image
rootfs=$out/rootfs
tar=$out/nxquota-$version.tar
oci=$out/nxquota-$version.oci.tar
tag=localhost/nxquota:$version
mirror=${NXQ_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${NXQ_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
pkgs=busybox,libc6,libgcc-s1,libjson-c5,libnl-3-200,libnl-genl-3-200,libmicrohttpd12
say() { echo "image: $*" >&2; }
die() { say "$*"; exit 1; }
t() { echo $(( $(date +%s) - $1 ))s; }

[ "$(id -u)" = 0 ] || die "run as root (mmdebstrap's root mode, podman's storage)"
command -v mmdebstrap > /dev/null ||
	die "mmdebstrap is not installed (apt-get install mmdebstrap; scripts/deps.sh --image installs it)"
mkdir -p "$out"
t0=$(date +%s)

# 1. the binaries
s=$(date +%s)
nice make -s lib tools > "$out/build.log" 2>&1 &&
	nice make -s -C tools static >> "$out/build.log" 2>&1 &&
	nice make -s -C preload libnxquota-preload.so >> "$out/build.log" 2>&1 ||
	{ tail -n 20 "$out/build.log" >&2; die "the build failed: see $out/build.log"; }
[ -x tools/nxquota-hook-static ] || die "make -C tools static made no tools/nxquota-hook-static"
say "built in $(t "$s")"

# 2. Debian's packages
s=$(date +%s)
rm -rf "$rootfs"
mmdebstrap --variant=extract --mode=root --include="$pkgs" \
	--dpkgopt='path-exclude=/usr/share/doc/*' \
	--dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/lintian/*' \
	bookworm "$rootfs" \
	"deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
	"deb $security bookworm-security main" < /dev/null > "$out/mmdebstrap.log" 2>&1 ||
	{ tail -n 20 "$out/mmdebstrap.log" >&2; die "mmdebstrap failed: see $out/mmdebstrap.log"; }
# extract unpacks with dpkg-deb, which the path-excludes do not reach
# (and glibc's iconv modules, 8 MiB that nothing in the image loads)
rm -rf "$rootfs/usr/share/doc" "$rootfs/usr/share/man" "$rootfs/usr/share/lintian" \
	"$rootfs/var/cache/apt" "$rootfs/var/lib/apt/lists" \
	"$rootfs/usr/lib/x86_64-linux-gnu/gconv"
say "Debian's packages ($pkgs) unpacked in $(t "$s")"

# 3. this project's make install, the entrypoint, the host's files
s=$(date +%s)
nice make -s install DESTDIR="$top/$rootfs" PREFIX=/usr > "$out/install.log" 2>&1 ||
	{ tail -n 20 "$out/install.log" >&2; die "make install failed: see $out/install.log"; }
for d in bin sbin usr/bin usr/sbin; do mkdir -p "$rootfs/$d"; done
/usr/sbin/chroot "$rootfs" /bin/busybox --install -s ||
	die "busybox --install in the root failed"
install -m 755 packaging/image/nxquota-node "$rootfs/usr/sbin/nxquota-node"
install -D -m 755 tools/nxquota-hook-static "$rootfs/usr/lib/nxquota/host/bin/nxquota-hook"
install -D -m 755 preload/libnxquota-preload.so "$rootfs/usr/lib/nxquota/host/lib/libnxquota-preload.so"
if [ -x build/nri/bin/nxquota-nri ]; then
	install -D -m 755 build/nri/bin/nxquota-nri "$rootfs/usr/lib/nxquota/host/bin/nxquota-nri"
	say "with the NRI plugin (build/nri/bin/nxquota-nri)"
else
	say "without the NRI plugin (integrations/nri/build.sh builds it)"
fi
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' \
	> "$rootfs/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$rootfs/etc/group"
printf 'passwd: files\ngroup: files\n' > "$rootfs/etc/nsswitch.conf"
mkdir -p "$rootfs/run/nxquota" "$rootfs/var/lib/nxquota" "$rootfs/opt/nxquota" \
	"$rootfs/etc/cdi" "$rootfs/tmp" "$rootfs/root" "$rootfs/proc" "$rootfs/sys" "$rootfs/dev"
chmod 1777 "$rootfs/tmp"
ldconfig -r "$rootfs"
# every program the image runs finds its libraries there
for b in usr/sbin/nxquotad usr/sbin/nxquotactl usr/sbin/nxquota-hook bin/busybox; do
	[ -x "$rootfs/$b" ] || die "make install put no /$b into the image"
	! /usr/sbin/chroot "$rootfs" /lib64/ld-linux-x86-64.so.2 --list "/$b" 2>&1 |
		grep 'not found' || die "/$b lacks the libraries above in the image"
done
say "make install and the entrypoint in $(t "$s")"

# 4. the tar
s=$(date +%s)
epoch=$(git log -1 --format=%ct 2>/dev/null || echo 0)
tar --sort=name --numeric-owner --owner=0 --group=0 --mtime="@$epoch" \
	-C "$rootfs" -cf "$tar" . || die "cannot write $tar"
say "$tar: $(du -m "$tar" | cut -f1) MiB ($(stat -c %s "$tar") bytes), $(find "$rootfs" -type f | wc -l) files, in $(t "$s")"

# 5. podman
if command -v podman > /dev/null; then
	s=$(date +%s)
	podman rmi -f "$tag" > /dev/null 2>&1 || true
	podman import \
		--change 'ENTRYPOINT ["/usr/sbin/nxquota-node"]' \
		--change 'CMD ["run"]' \
		--change "LABEL org.opencontainers.image.title=nxquota org.opencontainers.image.version=$version" \
		--message "nxquota $version node image (make image)" \
		"$tar" "$tag" > "$out/podman.log" 2>&1 ||
		{ cat "$out/podman.log" >&2; die "podman import failed"; }
	rm -f "$oci"
	podman save --format oci-archive -o "$oci" "$tag" >> "$out/podman.log" 2>&1 ||
		{ cat "$out/podman.log" >&2; die "podman save failed"; }
	say "podman: $tag, $(podman image inspect --format '{{.Size}}' "$tag") bytes; $oci; in $(t "$s")"
else
	say "podman is not installed: $tar only (podman import it elsewhere)"
fi
say "done in $(t "$t0")"
