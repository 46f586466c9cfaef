#!/bin/sh
# make install, checked as a packager and a user would:
#  1. `make install DESTDIR=$tmp PREFIX=/usr` produces exactly the expected
#     tree (files, links and their targets, modes), and `make uninstall`
#     with the same variables removes every file again;
#  2. nxquota.pc names the installed prefix and version, and a program
#     built with the installed pkg-config file (shared, then static) links
#     and runs: an unmanaged context, a host arena, an allocation written
#     and freed, the statistics after;
#  3. the module source installed for DKMS builds through dkms itself
#     (a private dkms tree in a private mount namespace: nothing on this
#     machine changes) for every kernel the tests use (scripts/deps.sh
#     --print), and each module carries the project's version and that
#     kernel's vermagic.  Without dkms or namespaces the same
#     source is built with kbuild directly, and this says so.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
version=$(cat VERSION)
tmp=$(mktemp -d /tmp/nxq-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
fail() { echo "install: FAIL: $*"; exit 1; }

make -s install DESTDIR="$root" PREFIX=/usr >"$tmp/make.log" 2>&1 ||
	{ cat "$tmp/make.log"; fail "make install"; }

# ---- 1. the tree ----------------------------------------------------------
src=usr/src/nxquota-$version
{
	cat <<EOF
f 644 usr/include/nxquota.h
f 644 usr/include/linux/nxquota.h
f 755 usr/lib/libnxquota.so.$version
l libnxquota.so.$version usr/lib/libnxquota.so.0
l libnxquota.so.0 usr/lib/libnxquota.so
f 644 usr/lib/libnxquota.a
f 644 usr/lib/pkgconfig/nxquota.pc
f 644 usr/lib/udev/rules.d/60-nxquota.rules
f 755 usr/sbin/nxquotad
f 644 usr/share/man/man8/nxquotad.8
f 644 usr/lib/systemd/system/nxquotad.service
f 644 usr/lib/systemd/system/nxquotad.socket
f 644 usr/lib/systemd/system/nxquotad-control.socket
f 644 usr/lib/sysusers.d/nxquota.conf
f 644 usr/lib/tmpfiles.d/nxquota.conf
f 755 usr/lib/libnxquota-preload.so
f 644 usr/lib/nxquota/ld.so.preload
f 755 usr/bin/nxquota-run
f 644 usr/share/man/man1/nxquota-run.1
f 644 $src/dkms.conf
f 644 $src/VERSION
f 644 $src/include/uapi/linux/nxquota.h
f 644 $src/kmod/Kbuild
f 644 $src/kmod/Kconfig
EOF
	for f in kmod/*.c kmod/*.h; do echo "f 644 $src/$f"; done
	for f in man/man3/*.3; do echo "f 644 usr/share/$f"; done
	[ ! -f tools/nxquotactl ] || echo "f 755 usr/sbin/nxquotactl"
	[ ! -f tools/nxquotactl.8 ] || echo "f 644 usr/share/man/man8/nxquotactl.8"
	if [ -f tools/nxquota-hook ]; then
		echo "f 755 usr/sbin/nxquota-hook"
		echo "f 644 usr/share/man/man8/nxquota-hook.8"
		echo "f 644 usr/share/containers/oci/hooks.d/nxquota.json"
	fi
} | sort -k3 >"$tmp/expected"
(cd "$root" && find . ! -type d | sed 's|^\./||' | sort | while read -r p; do
	if [ -L "$p" ]; then
		echo "l $(readlink "$p") $p"
	elif [ -f "$p" ]; then
		echo "f $(stat -c %a "$p") $p"
	else
		echo "? - $p"
	fi
done) | sort -k3 >"$tmp/got"
if ! diff -u "$tmp/expected" "$tmp/got" >"$tmp/tree.diff"; then
	cat "$tmp/tree.diff"
	fail "installed tree differs from the expected one (- expected, + got)"
fi
# Installed copies are the sources, not stale ones.
cmp -s include/nxquota.h "$root/usr/include/nxquota.h" || fail "nxquota.h differs"
cmp -s include/uapi/linux/nxquota.h "$root/usr/include/linux/nxquota.h" ||
	fail "uapi header differs"
for f in kmod/*.c kmod/*.h kmod/Kbuild; do
	cmp -s "$f" "$root/$src/$f" || fail "$src/$f differs from $f"
done
soname=$(readelf -d "$root/usr/lib/libnxquota.so.$version" |
	sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libnxquota.so.0 ] || fail "soname is '$soname', not libnxquota.so.0"
grep -q '^libdir="/usr/lib"' "$root/usr/bin/nxquota-run" ||
	fail "nxquota-run does not look for the shim in the installed libdir"
grep -Eq '^KERNEL=="nxquota",.*GROUP="nxquota", MODE="0660"' "$root/usr/lib/udev/rules.d/60-nxquota.rules" ||
	fail "udev rule does not give /dev/nxquota group nxquota, mode 0660"
grep -qx "PACKAGE_VERSION=\"$version\"" "$root/$src/dkms.conf" ||
	fail "dkms.conf does not carry version $version"
# nxquotad: the release build (no sanitizer), its units where systemd
# reads them, naming the installed binary; the client socket for the group
# nxquota (0660), the control socket root's (0600); the group is created.
units=$root/usr/lib/systemd/system
! readelf -d "$root/usr/sbin/nxquotad" | grep -q 'NEEDED.*lib[at]san' ||
	fail "the installed nxquotad is a sanitizer build"
"$root/usr/sbin/nxquotad" -x >/dev/null 2>&1 && fail "nxquotad -x: exit 0"
[ $? = 2 ] || fail "nxquotad -x: not a usage error"
grep -qx "ExecStart=/usr/sbin/nxquotad" "$units/nxquotad.service" ||
	fail "nxquotad.service does not start /usr/sbin/nxquotad"
for kv in ListenSequentialPacket=/run/nxquota/client/nxquota.sock SocketGroup=nxquota \
	SocketMode=0660 FileDescriptorName=client; do
	grep -qx "$kv" "$units/nxquotad.socket" || fail "nxquotad.socket lacks $kv"
done
for kv in ListenSequentialPacket=/run/nxquota/control.sock SocketMode=0600 \
	FileDescriptorName=control; do
	grep -qx "$kv" "$units/nxquotad-control.socket" ||
		fail "nxquotad-control.socket lacks $kv"
done
grep -qx "g nxquota -" "$root/usr/lib/sysusers.d/nxquota.conf" ||
	fail "the sysusers snippet does not create the group nxquota"
# the run directory at boot: the client socket's directory of its own
# (containers are given it) below the control socket's
for d in "/run/nxquota        0755 root root -" "/run/nxquota/client 0755 root root -"; do
	grep -qx "d $d" "$root/usr/lib/tmpfiles.d/nxquota.conf" ||
		fail "the tmpfiles.d snippet does not make $d"
done
if command -v systemd-tmpfiles >/dev/null; then
	# applied to an empty root: the directories, root's, 0755
	mkdir "$tmp/tmpfiles"
	systemd-tmpfiles --create --root="$tmp/tmpfiles" \
		"$root/usr/lib/tmpfiles.d/nxquota.conf" >"$tmp/tmpfiles.log" 2>&1 ||
		{ cat "$tmp/tmpfiles.log"; fail "systemd-tmpfiles --create of the snippet"; }
	for d in run/nxquota run/nxquota/client; do
		[ "$(stat -c '%F %a %u' "$tmp/tmpfiles/$d" 2>&1)" = "directory 755 0" ] ||
			fail "systemd-tmpfiles made $d: $(stat -c '%F %a %u' "$tmp/tmpfiles/$d" 2>&1)"
	done
fi
if command -v systemd-analyze >/dev/null; then
	# verified in a copy whose ExecStart is the binary in DESTDIR
	mkdir "$tmp/units"
	sed "s|^ExecStart=/usr/sbin/|ExecStart=$root/usr/sbin/|" \
		"$units/nxquotad.service" >"$tmp/units/nxquotad.service"
	cp "$units/nxquotad.socket" "$units/nxquotad-control.socket" "$tmp/units/"
	(cd "$tmp/units" && systemd-analyze verify --man=no ./nxquotad.service \
		./nxquotad.socket ./nxquotad-control.socket) >"$tmp/verify.log" 2>&1 ||
		{ cat "$tmp/verify.log"; fail "systemd-analyze verify of the units"; }
fi
echo "install: tree ok ($(wc -l <"$tmp/got") files and links, soname $soname)"

# ---- 2. pkg-config and a program built against the installed tree -------
export PKG_CONFIG_SYSROOT_DIR="$root" PKG_CONFIG_LIBDIR="$root/usr/lib/pkgconfig"
unset PKG_CONFIG_PATH
[ "$(pkg-config --modversion nxquota)" = "$version" ] || fail "pkg-config version"
pc=$root/usr/lib/pkgconfig/nxquota.pc
for kv in prefix=/usr libdir=/usr/lib includedir=/usr/include; do
	grep -qx "$kv" "$pc" || fail "nxquota.pc lacks $kv: $(grep = "$pc" | head -n 3)"
done
cflags=$(pkg-config --cflags nxquota)
libs=$(pkg-config --libs nxquota)
case "$cflags $libs" in
*"$root/usr/include"*"$root/usr/lib"*) ;;
*) fail "pkg-config flags do not point into DESTDIR: $cflags $libs" ;;
esac
cat >"$tmp/prog.c" <<'EOF'
#include <nxquota.h>
#include <linux/nxquota.h>	/* the kernel ABI header, installed too */
#include <stdio.h>
#include <string.h>

int main(void)
{
	struct nxq_ctx_opts co = { .size = sizeof(co), .flags = NXQ_CTX_UNMANAGED };
	struct nxq_arena_opts ao = { .size = sizeof(ao), .backend = NXQ_BACKEND_HOST };
	struct nxq_stats st = { .size = sizeof(st) };
	struct nxq_ctx *ctx;
	struct nxq_arena *a;
	void *p;
	int err;

	if ((err = nxq_ctx_open(&co, &ctx)) < 0 ||
	    (err = nxq_arena_create(ctx, &ao, &a)) < 0 ||
	    (err = nxq_alloc(a, 1 << 20, 0, &p)) < 0) {
		fprintf(stderr, "prog: %s (%d)\n", nxq_errmsg(), err);
		return 1;
	}
	memset(p, 0x5a, 1 << 20);
	if (nxq_arena_stats(a, &st) < 0 || st.in_use < (1 << 20) ||
	    !(st.flags & NXQ_STATS_UNMANAGED))
		return 2;
	if (nxq_free(a, p) < 0 || nxq_arena_destroy(a) < 0 || nxq_ctx_close(ctx) < 0)
		return 3;
	printf("abi %u, mapped %llu, in use %llu\n", NXQ_ABI_VERSION,
	       (unsigned long long)st.mapped, (unsigned long long)st.in_use);
	return 0;
}
EOF
# shellcheck disable=SC2086
cc -Wall -Werror $cflags -o "$tmp/prog" "$tmp/prog.c" $libs ||
	fail "a program does not build against the installed pkg-config file"
readelf -d "$tmp/prog" | grep -q 'NEEDED.*\[libnxquota\.so\.0\]' ||
	fail "the program does not link libnxquota.so.0"
out=$(LD_LIBRARY_PATH="$root/usr/lib" "$tmp/prog") || fail "the program failed (rc $?)"
echo "install: shared: $out"
# Static: the .a and the .pc's Libs.private are enough.
slibs=$(pkg-config --static --libs nxquota |
	sed 's/-lnxquota/-Wl,-Bstatic -lnxquota -Wl,-Bdynamic/')
# shellcheck disable=SC2086
cc -Wall -Werror $cflags -o "$tmp/prog-static" "$tmp/prog.c" $slibs ||
	fail "a program does not link statically with pkg-config --static"
! readelf -d "$tmp/prog-static" | grep -q 'NEEDED.*libnxquota' ||
	fail "the static program still needs libnxquota.so"
out=$("$tmp/prog-static") || fail "the static program failed (rc $?)"
echo "install: static: $out"

# ---- 3. the DKMS source builds -------------------------------------------
# For every kernel the tests use: Debian 12's through their headers
# packages, trixie-backports' through the trees scripts/deps.sh prepares
# (--kernelsourcedir, as for any kernel whose headers are not under
# /lib/modules/KVER/build).
kernels=$(scripts/deps.sh --print)
[ -n "$kernels" ] || fail "scripts/deps.sh --print listed no kernel"
why=""
if ! command -v dkms >/dev/null; then
	why="dkms is not installed"
elif ! unshare --mount true 2>/dev/null; then
	why="no private mount namespace here (unshare)"
fi
if [ -z "$why" ]; then
	mkdir -p "$tmp/fw" "$tmp/dkms"
	cat >"$tmp/fw/nxq-test.conf" <<EOF
source_tree="$root/usr/src"
dkms_tree="$tmp/dkms"
install_tree="$tmp/modules"
sign_file="/nonexistent"
EOF
	how="dkms build"
else
	echo "install: dkms skipped: $why; building the installed source with kbuild"
	how="kbuild"
fi
added=0
echo "$kernels" | while read -r kver img kdir; do
	[ -n "$kver" ] && [ -f "$kdir/Makefile" ] ||
		fail "no kernel headers for $kver at $kdir (scripts/deps.sh)"
	if [ -z "$why" ]; then
		# dkms add once, then a build per kernel
		if unshare --mount --propagation private sh -c '
			mount --bind "$1" /etc/dkms/framework.conf.d &&
			{ [ "$5" = 1 ] || dkms add -m nxquota -v "$2"; } &&
			dkms build -m nxquota -v "$2" -k "$3" --kernelsourcedir "$4"' \
			sh "$tmp/fw" "$version" "$kver" "$kdir" "$added" \
			>"$tmp/dkms.log" 2>&1; then
			ko=$(find "$tmp/dkms/nxquota/$version/$kver" -name 'nxquota.ko*' | head -n 1)
		else
			cat "$tmp/dkms.log"
			find "$tmp/dkms/nxquota/$version/$kver" -name make.log \
				-exec cat {} + 2>/dev/null || true
			fail "dkms build of the installed source for $kver"
		fi
		added=1
	else
		rm -rf "$tmp/kbuild"
		cp -a "$root/$src" "$tmp/kbuild"
		make -C "$kdir" M="$tmp/kbuild/kmod" CONFIG_NXQUOTA=m \
			-j"$(nproc)" modules >"$tmp/kbuild.log" 2>&1 ||
			{ cat "$tmp/kbuild.log"; fail "kbuild of the installed source for $kver"; }
		ko=$tmp/kbuild/kmod/nxquota.ko
	fi
	[ -n "$ko" ] && [ -f "$ko" ] || fail "no nxquota.ko after $how for $kver"
	[ "$(modinfo -F version "$ko")" = "$version" ] ||
		fail "module version '$(modinfo -F version "$ko")', not $version"
	modinfo -F vermagic "$ko" | grep -q "^$kver " || fail "module not built for $kver"
	echo "install: $how ok: nxquota.ko $version for $kver"
done || exit 1

# ---- 4. uninstall ---------------------------------------------------------
make -s uninstall DESTDIR="$root" PREFIX=/usr >"$tmp/make.log" 2>&1 ||
	{ cat "$tmp/make.log"; fail "make uninstall"; }
left=$(cd "$root" && find . ! -type d)
[ -z "$left" ] || fail "make uninstall left: $left"
echo "install: uninstall ok"
