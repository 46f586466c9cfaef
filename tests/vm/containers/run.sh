#!/bin/bash
# tests/vm/containers/run.sh - real container runtimes in the test VM:
# Debian's crun and podman running containers with OCI hooks and CDI, on
# Debian's 6.1 and 6.12 kernels, against the module or nxquotad.
#
#   tests/vm/containers/run.sh [--kernel KVER]... [--authority A] [SCENARIO...]
#
#   --kernel KVER    a kernel that scripts/deps.sh --print lists (matched
#                    exactly or as a prefix: 6.1, 6.12); default: all
#   --authority A    module, daemon or both (default both): module loads
#                    nxquota.ko (make -C kmod KDIR=... O_SUFFIX=KVER), daemon
#                    runs nxquotad instead (make -C daemon static); image
#                    (never part of both) starts neither: the node image's
#                    OCI archive (make image: build/image/nxquota-VERSION.oci.tar)
#                    is in the VM as /image/nxquota.oci.tar, and the
#                    scenarios (tests/vm/containers/image, make check-image)
#                    run its nxquotad with podman
#   --ko-dir DIR     boot DIR/KVER/nxquota.ko instead of building kmod/
#   SCENARIO         names of tests/vm/containers/scenarios/*.sh (default all)
#
# It packs a busybox initramfs with crun, podman and conmon (their shared
# libraries copied from this machine), /etc/containers for cgroupfs + vfs +
# no network, a container rootfs, the test hook, nxquota-hook, nxquotactl,
# the LD_PRELOAD shim, the fake CUDA driver and the programs the containers
# run (nxq-cuda-app, nxq-libholder), and the scenarios, boots it
# under QEMU (TCG) and reads the results the VM's /init
# (tests/vm/containers/init.sh) prints.  Everything goes under
# build/vm-containers/ (NXQ_CONTAINERS_OUT: another directory); each
# boot's console is build/vm-containers/KVER/console-AUTHORITY.log.
#
# A failed scenario, a missing result, a timeout, the authority's end
# (rmmod, or nxquotad's exit on SIGTERM) failing, or a kernel-log line with
# WARNING:, BUG:, Oops, Call Trace, lockdep, KASAN, UBSAN, refcount_t,
# list_add corruption or general protection fails the run.
#
# Output: one line per scenario per kernel and authority, the time each boot
# took, then exactly
#   containers: N passed, M failed, K skipped
# Exit status: 0 when nothing failed, 1 otherwise, 2 for bad usage.
#
# Environment:
#   NXQ_VM_TIMEOUT    seconds one boot may take in all (default 600)
#   NXQ_SCEN_TIMEOUT  seconds one scenario may take inside it (default 150;
#                     more for a scenario with "# nxq-timeout: SECONDS")
#   NXQ_VM_ADD        "SRC:DEST ..." more files for the VM's root (their
#                     shared libraries come along)
#   NXQ_CTR_ADD       "SRC:DEST ..." more files for the container rootfs
#                     /ctr/rootfs (with their shared libraries)
#   NXQ_SCEN_DIRS     more directories of scenarios, run only when named
#                     (integrations/nri/test)
#   NXQ_QEMU_EXTRA    more QEMU arguments
#   NXQ_QEMU_ACCEL    -accel's value (default tcg,thread=single: see boot()
#                     in tests/vm/run.sh for why not multi-threaded TCG)
set -u

top=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$top" || exit 2
here=tests/vm/containers
out=${NXQ_CONTAINERS_OUT:-build/vm-containers}	# make check boots two runners at once
vm_timeout=${NXQ_VM_TIMEOUT:-600}
NXQ_QEMU_ACCEL=${NXQ_QEMU_ACCEL:-tcg,thread=single}
scen_timeout=${NXQ_SCEN_TIMEOUT:-150}
daemon_bin=daemon/build/nxquotad-static
splat='WARNING:|BUG:|Oops|Call Trace|lockdep|possible circular locking|KASAN|UBSAN|refcount_t|list_add corruption|general protection'

authority=both
ko_dir=
want_kernels=()
want_scen=()
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) [ $# -ge 2 ] || { echo "containers: --kernel needs a value" >&2; exit 2; }
		want_kernels+=("$2"); shift ;;
	--kernel=*) want_kernels+=("${1#*=}") ;;
	--authority) [ $# -ge 2 ] || { echo "containers: --authority needs a value" >&2; exit 2; }
		authority=$2; shift ;;
	--authority=*) authority=${1#*=} ;;
	--ko-dir) [ $# -ge 2 ] || { echo "containers: --ko-dir needs a value" >&2; exit 2; }
		ko_dir=$(cd "$2" && pwd) || exit 2; shift ;;
	-h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "containers: unknown option $1" >&2; exit 2 ;;
	*) want_scen+=("${1%.sh}") ;;
	esac
	shift
done
case "$authority" in
module) auths=(module) ;;
daemon) auths=(daemon) ;;
both) auths=(module daemon) ;;
image) auths=(image) ;;
*) echo "containers: --authority module, daemon, both or image, not $authority" >&2; exit 2 ;;
esac

npass=0 nfail=0 nskip=0
report() {	# label name status reason
	local st
	case "$3" in
	pass) st=PASS; npass=$((npass + 1)) ;;
	skip) st=SKIP; nskip=$((nskip + 1)) ;;
	*) st=FAIL; nfail=$((nfail + 1)) ;;
	esac
	printf 'containers: %-29s %-16s %s %s\n' "$1" "$2" "$st" "$4"
}
summary() {
	echo "containers: $npass passed, $nfail failed, $nskip skipped"
	[ "$nfail" -eq 0 ]
	exit $?
}
setup_fail() {
	report host setup fail "$*"
	summary
}

# ---- what the host needs -------------------------------------------------

need() {	# command package
	command -v "$1" > /dev/null ||
		setup_fail "$1 not installed (package $2; scripts/deps.sh installs it)"
}
need qemu-system-x86_64 qemu-system-x86
need gcc build-essential
need make make
need cpio cpio
need gzip gzip
need ldd libc-bin
need python3 python3
need crun crun
need podman podman
need conmon conmon
busybox=/bin/busybox
[ -x "$busybox" ] || setup_fail "no $busybox (package busybox-static)"
if LC_ALL=C readelf -l "$busybox" 2>/dev/null | grep -q 'program interpreter'; then
	setup_fail "$busybox is dynamically linked (install busybox-static)"
fi
seccomp=/usr/share/containers/seccomp.json
[ -f "$seccomp" ] ||
	setup_fail "no $seccomp (package golang-github-containers-common)"
[ -f /usr/share/containers/containers.conf ] ||
	setup_fail "no /usr/share/containers/containers.conf (package golang-github-containers-common)"

kernels=()
while read -r kver img kdir; do
	[ -n "$kver" ] && kernels+=("$kver $img $kdir")
done < <(scripts/deps.sh --print)
[ ${#kernels[@]} -gt 0 ] || setup_fail "scripts/deps.sh --print listed no kernel"
kmatch() {	# kver wanted
	[ "$1" = "$2" ] || [[ "$1" == "$2".* ]] || [[ "$1" == "$2"-* ]] ||
		[[ "$1" == "$2"+* ]]
}
if [ ${#want_kernels[@]} -gt 0 ]; then
	sel=()
	for k in "${kernels[@]}"; do
		for w in "${want_kernels[@]}"; do
			kmatch "${k%% *}" "$w" && { sel+=("$k"); break; }
		done
	done
	[ ${#sel[@]} -gt 0 ] || setup_fail "no kernel matches ${want_kernels[*]}"
	kernels=("${sel[@]}")
fi

# scen_file NAME: the scenario's file, in $here/scenarios or, named on the
# command line only, in a directory of NXQ_SCEN_DIRS.
scen_file() {
	local d
	for d in "$here/scenarios" ${NXQ_SCEN_DIRS:-}; do
		[ -f "$d/$1.sh" ] && { echo "$d/$1.sh"; return 0; }
	done
	return 1
}
scen=()
if [ ${#want_scen[@]} -gt 0 ]; then
	for s in "${want_scen[@]}"; do
		scen_file "$s" > /dev/null || { echo "containers: no scenario $s in $here/scenarios ${NXQ_SCEN_DIRS:-}" >&2; exit 2; }
		scen+=("$s")
	done
else
	for f in "$here"/scenarios/*.sh; do
		[ -f "$f" ] && scen+=("$(basename "$f" .sh)")
	done
fi
[ ${#scen[@]} -gt 0 ] || setup_fail "no scenario in $here/scenarios"

# ---- programs (kernel-independent, built once) ----------------------------

bin=$out/bin
mkdir -p "$bin"
build_log() {	# log: show its tail
	tail -n 20 "$1" | sed 's/^/    /' >&2
}
# nxq-probe: dynamically linked on purpose (the container's loader and libc)
gcc -O2 -Wall -Werror -Iinclude/uapi -o "$bin/nxq-probe" "$here/nxq-probe.c" \
	> "$bin/nxq-probe.log" 2>&1 || { build_log "$bin/nxq-probe.log"; setup_fail "nxq-probe does not build: see $bin/nxq-probe.log"; }
# the test hook, static (it runs in the VM's root)
gcc -static -O2 -Wall -Wextra -Werror -o "$bin/nxq-test-hook" "$here/hooks/nxq-test-hook.c" \
	> "$bin/nxq-test-hook.log" 2>&1 || { build_log "$bin/nxq-test-hook.log"; setup_fail "nxq-test-hook does not build: see $bin/nxq-test-hook.log"; }
# nxq-sweep (tests/vm/tools): the daemon's leftover devices
sweep_cflags=(-static -O2 -Wall -Werror -Iinclude/uapi -Itests/vm)
! grep -q NXQUOTA_A_DEVICE_WAITERS include/uapi/linux/nxquota.h ||
	sweep_cflags+=(-DSC_HAVE_DEVICE_WAITERS)
rm -f "$bin/nxq-sweep"
if [ -f tests/vm/tools/nxq-sweep.c ]; then
	gcc "${sweep_cflags[@]}" -o "$bin/nxq-sweep" tests/vm/tools/nxq-sweep.c \
		> "$bin/nxq-sweep.log" 2>&1 || { build_log "$bin/nxq-sweep.log"; setup_fail "nxq-sweep does not build: see $bin/nxq-sweep.log"; }
fi
# What the nxquota scenarios run in their containers (each is optional: a
# scenario that needs a missing one says SKIP): the fake CUDA driver
# (tests/fakecuda), the LD_PRELOAD shim (preload/), an unmodified CUDA
# program linked against libcuda.so.1 (nxq-cuda-app.c) and a program linked
# with libnxquota, static (lib/tests-vm/nxq-libholder.c).  make is
# incremental: in make check the lib, preload and tools stages built them.
nice -n 10 make -s -C tests/fakecuda libcuda.so.1 > "$bin/fakecuda.log" 2>&1 ||
	build_log "$bin/fakecuda.log"
nice -n 10 make -s -C preload libnxquota-preload.so > "$bin/preload.log" 2>&1 ||
	build_log "$bin/preload.log"
nice -n 10 make -s -C tools static > "$bin/tools.log" 2>&1 ||
	build_log "$bin/tools.log"
rm -f "$bin/nxq-cuda-app" "$bin/nxq-libholder"
if [ -f tests/fakecuda/libcuda.so.1 ]; then
	gcc -O2 -Wall -Wextra -Werror -o "$bin/nxq-cuda-app" "$here/nxq-cuda-app.c" \
		tests/fakecuda/libcuda.so.1 > "$bin/nxq-cuda-app.log" 2>&1 ||
		{ build_log "$bin/nxq-cuda-app.log"; setup_fail "nxq-cuda-app does not build: see $bin/nxq-cuda-app.log"; }
fi
if [ -f lib/libnxquota.a ]; then
	gcc -static -O2 -Wall -Iinclude -Iinclude/uapi -o "$bin/nxq-libholder" \
		lib/tests-vm/nxq-libholder.c lib/libnxquota.a -lpthread \
		> "$bin/nxq-libholder.log" 2>&1 || build_log "$bin/nxq-libholder.log"
fi
daemon_why=
if [[ " ${auths[*]} " == *" daemon "* ]]; then
	if ! nice -n 10 make -s -C daemon static > "$out/daemon-build.log" 2>&1; then
		build_log "$out/daemon-build.log"
		daemon_why="nxquotad does not build: see $out/daemon-build.log"
	elif [ ! -x "$daemon_bin" ]; then
		daemon_why="make -C daemon static made no $daemon_bin"
	fi
fi

# ---- the VM's root (common to every boot) --------------------------------

root=$out/root
# copy_libs ELF ROOT: the shared libraries ldd lists for ELF, and the loader,
# into ROOT at the same paths (symlinks resolved).
copy_libs() {
	local l
	for l in $(LC_ALL=C ldd "$1" 2>/dev/null |
		sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (0x.*/\1/p'); do
		[ -e "$2$l" ] || install -D -m 755 "$(readlink -f "$l")" "$2$l"
	done
}
# add_file SRC DEST ROOT [MODE]
add_file() {
	install -D -m "${4:-755}" "$1" "$3$2" || return 1
	copy_libs "$1" "$3"
}
# busybox and a link per applet in ROOT/bin (one process for the ~400
# links: a fork each costs seconds on a loaded 2-core host).
busybox_into() {	# root
	mkdir -p "$1/bin"
	cp "$busybox" "$1/bin/busybox"
	"$busybox" --list | python3 -c '
import os, sys
d = sys.argv[1]
for a in sys.stdin.read().split():
    if a != "busybox" and not os.path.lexists(os.path.join(d, a)):
        os.symlink("busybox", os.path.join(d, a))' "$1/bin" ||
		setup_fail "cannot link busybox applets (python3 missing?)"
	ln -sfn bin "$1/sbin"
}

rm -rf "$root"
mkdir -p "$root"/{dev,proc,sys,tmp,run,root,lib,etc,tools,containers/scenarios}
mkdir -p "$root"/usr/{bin,sbin,lib,libexec/nxq,share/containers/oci/hooks.d}
mkdir -p "$root"/var/{lib/containers,lib/nxquota,tmp} "$root/etc/cdi"
ln -s ../run "$root/var/run"
busybox_into "$root"
for b in crun podman conmon; do
	add_file "$(command -v $b)" "/usr/bin/$b" "$root" || setup_fail "cannot copy $b"
done
# catatonit: podman's pause image for a pod's infra container is built
# from it (podman pod create without --infra=false).
[ ! -x /usr/libexec/podman/catatonit ] ||
	add_file /usr/libexec/podman/catatonit /usr/libexec/podman/catatonit "$root"
install -D -m 644 "$seccomp" "$root$seccomp"
# Debian's containers.conf (golang-github-containers-common), read before
# the VM's /etc one; and README.md, whose podman example podman_debian runs.
install -D -m 644 /usr/share/containers/containers.conf "$root/usr/share/containers/containers.conf"
install -m 644 README.md "$root/containers/README.md"
cp -r "$here/etc/containers" "$root/etc/"
install -m 755 "$bin/nxq-test-hook" "$root/usr/libexec/nxq/nxq-test-hook"
install -m 755 "$here/init.sh" "$root/init"
install -m 644 "$here/lib.sh" "$root/containers/lib.sh"
for s in "${scen[@]}"; do
	install -m 755 "$(scen_file "$s")" "$root/containers/scenarios/$s.sh"
done
add_file "$bin/nxq-probe" /bin/nxq-probe "$root"
[ ! -x "$bin/nxq-sweep" ] || install -m 755 "$bin/nxq-sweep" "$root/tools/nxq-sweep"
[ ! -x tools/nxquotactl-static ] ||
	install -m 755 tools/nxquotactl-static "$root/tools/nxquotactl"
# The OCI hook when it has been built (make -C tools, or make -C tools
# static for tools/nxquota-hook-static, preferred): /usr/bin/nxquota-hook,
# with its shared libraries.  The scenarios that use it install its
# hooks.d JSON or CDI spec themselves.
for h in tools/nxquota-hook-static tools/nxquota-hook; do
	if [ -f "$h" ] && [ -x "$h" ] && head -c 4 "$h" | grep -q ELF; then
		add_file "$h" /usr/bin/nxquota-hook "$root"
		break
	fi
done
# The shim where the CDI spec's --shim and the crun bundles take it from,
# and the packaged oci-hooks(5) file as make install writes it for
# SBINDIR=/usr/bin (podman_hooksd installs it into /etc/containers).
if [ -f preload/libnxquota-preload.so ]; then
	install -D -m 755 preload/libnxquota-preload.so "$root/usr/lib/nxquota/libnxquota-preload.so"
fi
mkdir -p "$root/usr/share/nxquota"
sed 's|@SBINDIR@|/usr/bin|' packaging/oci-hooks.d/nxquota.json > "$root/usr/share/nxquota/oci-hooks.json"
# The node image (make image), for --authority image: its OCI archive, as
# podman save wrote it on the host.
if [ "${auths[*]}" = image ]; then
	img=build/image/nxquota-$(cat VERSION).oci.tar
	[ -f "$img" ] || setup_fail "no $img: run make image first (make check-image does)"
	install -D -m 644 "$img" "$root/image/nxquota.oci.tar"
fi
for a in ${NXQ_VM_ADD:-}; do
	add_file "${a%%:*}" "${a#*:}" "$root" || setup_fail "NXQ_VM_ADD: cannot add $a"
done
cat > "$root/etc/passwd" <<-'PW'
	root:x:0:0:root:/root:/bin/sh
	nobody:x:65534:65534:nobody:/nonexistent:/bin/false
	PW
cat > "$root/etc/group" <<-'GR'
	root:x:0:
	nxquota:x:990:
	nogroup:x:65534:
	GR
printf 'passwd: files\ngroup: files\nhosts: files\n' > "$root/etc/nsswitch.conf"
printf '127.0.0.1 localhost\n::1 localhost\n' > "$root/etc/hosts"
: > "$root/etc/resolv.conf"
echo nxq-vm > "$root/etc/hostname"

# The container rootfs: busybox, the loader and libc (and the libraries
# glibc programs commonly link) for dynamically linked programs, nxq-probe.
cr=$root/ctr/rootfs
mkdir -p "$cr"/{dev,proc,sys,tmp,run,etc,root,lib,usr/bin,usr/lib}
busybox_into "$cr"
for l in libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1; do
	f=/lib/x86_64-linux-gnu/$l
	[ -e "$f" ] && install -D -m 755 "$(readlink -f "$f")" "$cr$f"
done
install -D -m 755 "$(readlink -f /lib64/ld-linux-x86-64.so.2)" "$cr/lib64/ld-linux-x86-64.so.2"
add_file "$bin/nxq-probe" /bin/nxq-probe "$cr"
# The fake driver where the container's loader finds libcuda.so.1, the
# programs, and an empty file as the mount point of the shim (the crun
# bundles and the CDI spec bind-mount it there; an empty file is no shim).
[ ! -f tests/fakecuda/libcuda.so.1 ] ||
	install -D -m 755 tests/fakecuda/libcuda.so.1 "$cr/usr/lib/x86_64-linux-gnu/libcuda.so.1"
[ ! -x "$bin/nxq-cuda-app" ] || add_file "$bin/nxq-cuda-app" /bin/nxq-cuda-app "$cr"
[ ! -x "$bin/nxq-libholder" ] || install -m 755 "$bin/nxq-libholder" "$cr/bin/nxq-libholder"
mkdir -p "$cr/usr/lib/nxquota" "$cr/x"
: > "$cr/usr/lib/nxquota/libnxquota-preload.so"
for a in ${NXQ_CTR_ADD:-}; do
	add_file "${a%%:*}" "${a#*:}" "$cr" || setup_fail "NXQ_CTR_ADD: cannot add $a"
done
cp "$root/etc/passwd" "$root/etc/group" "$root/etc/nsswitch.conf" "$cr/etc/"
: > "$cr/etc/hosts"; : > "$cr/etc/resolv.conf"; : > "$cr/etc/hostname"

(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) |
	gzip -1 > "$out/common.cpio.gz" || setup_fail "cannot pack $root"
echo "containers: initramfs $(du -m "$out/common.cpio.gz" | cut -f1) MiB compressed, $(du -sm "$root" | cut -f1) MiB unpacked; built and packed in ${SECONDS}s"

# ---- one boot ---------------------------------------------------------------

# The per-boot part (module or daemon, nxq.conf), appended to the common
# archive: the kernel unpacks concatenated archives in order.
pack_boot() {	# kver auth ko
	local kver="$1" auth="$2" ko="$3" r="$out/$1/boot-$2"
	rm -rf "$r"
	mkdir -p "$r/etc" "$r/lib" "$r/bin"
	[ -z "$ko" ] || install -m 644 "$ko" "$r/lib/nxquota.ko"
	[ "$auth" != daemon ] || install -m 755 "$daemon_bin" "$r/bin/nxquotad"
	cat > "$r/etc/nxq.conf" <<-EOF2
	NXQ_SCENARIOS="${scen[*]}"
	NXQ_TIMEOUT=$scen_timeout
	export NXQ_AUTHORITY=$auth
	EOF2
	{ cat "$out/common.cpio.gz"
	  (cd "$r" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) | gzip -1
	} > "$out/$kver/initramfs-$auth.cpio.gz"
}

splats() {	# log
	grep -a -E '\[ *[0-9]+\.[0-9]+\] ' "$1" | grep -a -v 'NXQ-' |
		grep -a -E "$splat" | sort -u
}

run_boot() {	# auth kver img kdir
	local auth="$1" kver="$2" img="$3" kdir="$4" ko='' why='' label="$2/$1"
	local log=$out/$2/console-$1.log t0 secs rc line st s stopped
	mkdir -p "$out/$kver"
	rm -f "$log"
	if [ "$auth" = daemon ]; then
		why=$daemon_why
	elif [ "$auth" = image ]; then
		:	# the scenarios start the image's nxquotad
	elif [ -n "$ko_dir" ]; then
		ko=$ko_dir/$kver/nxquota.ko
	else
		ko=build/kmod/$kver/nxquota.ko
		if [ ! -f kmod/Makefile ]; then
			why="kmod/Makefile missing"
		elif ! make -C kmod KDIR="$kdir" O_SUFFIX="$kver" \
				> "$out/$kver/kmod-build.log" 2>&1; then
			build_log "$out/$kver/kmod-build.log"
			why="the module does not build: see $out/$kver/kmod-build.log"
		fi
	fi
	[ -z "$why" ] && [ -n "$ko" ] && [ ! -f "$ko" ] && why="no $ko"
	if [ -n "$why" ]; then
		report "$label" "$auth" fail "$why"
		for s in "${scen[@]}"; do
			report "$label" "$s" fail "not run: no $auth"
		done
		return
	fi
	pack_boot "$kver" "$auth" "$ko"

	t0=$SECONDS
	timeout -k 5 "$vm_timeout" qemu-system-x86_64 -accel "$NXQ_QEMU_ACCEL" \
		-m 1536 -smp 2 -nographic -no-reboot -nic none \
		-kernel "$img" -initrd "$out/$kver/initramfs-$auth.cpio.gz" \
		-append "console=ttyS0 panic=-1 loglevel=5 tsc=reliable" \
		${NXQ_QEMU_EXTRA:-} < /dev/null 2>&1 | tr -d '\r' > "$log"
	rc=${PIPESTATUS[0]}
	secs=$((SECONDS - t0))
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		stopped="the VM timed out after ${vm_timeout}s"
	elif grep -a -q 'Kernel panic' "$log"; then
		stopped="the kernel panicked"
	else
		stopped="the VM stopped early (exit status $rc)"
	fi

	local last=rmmod
	[ "$auth" = daemon ] && last=nxquotad
	[ "$auth" = image ] && last=image
	for s in "${scen[@]}" "$last"; do
		line=$(grep -a -o "NXQ-RESULT $s .*" "$log" | tail -n 1)
		if [ -z "$line" ]; then
			if grep -a -q "^NXQ-START $s\$" "$log"; then
				report "$label" "$s" fail "no result: $stopped while it ran (see $log)"
			else
				report "$label" "$s" fail "no result: $stopped"
			fi
			continue
		fi
		line=${line#NXQ-RESULT $s }
		st=${line%% *}
		report "$label" "$s" "$st" "${line#"$st" }"
	done

	line=$(grep -a -o 'NXQ-BOOT .*' "$log" | head -n 1)
	if [ -z "$line" ]; then
		report "$label" boot fail "the VM never reached /init (see $log)"
	elif [ "${line#NXQ-BOOT }" != "$kver" ]; then
		report "$label" boot fail "booted ${line#NXQ-BOOT }, expected $kver"
	fi
	if ! grep -a -q 'NXQ-DONE' "$log"; then
		report "$label" shutdown fail "/init did not finish: $stopped (see $log)"
	fi
	s=$(splats "$log")
	if [ -n "$s" ]; then
		report "$label" kernel-log fail "$(echo "$s" | wc -l) splat line(s), first: $(echo "$s" | head -n 1)"
		echo "$s" | head -n 20 | sed 's/^/    /'
	fi
	line=$(grep -a -o 'NXQ-STAGE2 [0-9.]*s' "$log" | head -n 1)
	echo "containers: $label: booted and ran in ${secs}s (/init's stage 2 at ${line#NXQ-STAGE2 }); console log: $log"
}

for k in "${kernels[@]}"; do
	for a in "${auths[@]}"; do
		# shellcheck disable=SC2086
		run_boot "$a" $k
	done
done
summary
