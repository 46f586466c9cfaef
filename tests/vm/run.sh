#!/bin/bash
# tests/vm/run.sh - run the scenario programs on real kernels.
#
#   tests/vm/run.sh [--kernel KVER]... [SCENARIO...]   the tests (make check-vm)
#   tests/vm/run.sh --demo [--kernel KVER]              the demo (make demo)
#   tests/vm/run.sh --bench [--kernel KVER] [NAME...]   the figures: programs
#       in tests/vm/bench/ run like scenarios; their "BENCH ..." lines are
#       printed after the results
#   --authority module|daemon|both   which ledger the scenarios talk to
#       (default module): daemon boots without the module and runs
#       nxquotad (make -C daemon static -> daemon/build/nxquotad-static);
#       both boots each kernel twice.  Results of the daemon pass are
#       labelled KVER/daemon, its console is build/vm/KVER/console-daemon.log.
#   --kernel-list CMD   the kernels are the "KVER VMLINUZ KDIR" lines CMD
#       prints, instead of scripts/deps.sh --print's (make check-dmem:
#       'scripts/dmem-kernel.sh --print')
#   --dmem   every kernel run must have the dmem cgroup controller (see
#       below); one without it fails
#   --admin genl   with the module: the scenarios' sysfs helpers speak the
#       module's generic netlink family instead (the daemon's translation,
#       checked against the kernel); scenarios about sysfs keep sysfs
#
# For each kernel that scripts/deps.sh --print lists (or each --kernel,
# matched exactly or as a prefix: "6.1", "6.12"), it builds the module
# (make -C kmod KDIR=... O_SUFFIX=KVER -> build/kmod/KVER/nxquota.ko), packs
# a busybox initramfs with the module and the static scenario programs
# (tests/vm/scenarios/*.c; lib_*.c also link lib/libnxquota.a), boots it in
# QEMU with software emulation, and reads the results the VM's /init
# (tests/vm/init.sh) prints.  Everything goes under build/vm/; the whole
# console log of a run is build/vm/KVER/console.log.
#
# Where the kernel has the dmem cgroup controller (CONFIG_CGROUP_DMEM), the
# VM enables it for the whole cgroup tree before the scenarios run; the
# line after each boot says "dmem: on" or "dmem: absent".
#
# A kernel-log line with WARNING:, BUG:, Oops, Call Trace, lockdep, KASAN,
# UBSAN, refcount_t, list_add corruption or general protection is a failure
# of the run, as are a missing result, a timeout and a failed rmmod.
#
# Output: one line per scenario per kernel, then exactly
#   vm: N passed, M failed, K skipped
# Exit status: 0 when nothing failed, 1 otherwise, 2 for bad usage.
#
# Environment:
#   NXQ_VM_TIMEOUT    seconds one boot may take in all (default 180; 360 for
#                     the daemon pass)
#   NXQ_SCEN_TIMEOUT  seconds one scenario may take inside it (default 60)
#   NXQ_RACE_*, NXQ_FUZZ_*, NXQ_BENCH_*  numeric knobs passed into the VM
#                     (e.g. NXQ_RACE_SECS, NXQ_FUZZ_IOCTLS; see the programs)
#   NXQ_TEST_TIMEOUT  seconds one test of a harness program may take
#                     (tests/vm/harness.h; default 30), passed in too
# For work on the harness itself, --ko-dir DIR boots DIR/KVER/nxquota.ko
# instead of building kmod/.
set -u

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 2
out=build/vm
daemon_bin=daemon/build/nxquotad-static
# 80 s idle; twice that on a loaded 2-core host (all vCPUs share one host
# thread, see boot()), so the ceiling is well above both.
vm_timeout=${NXQ_VM_TIMEOUT:-300}
# One host thread for all vCPUs: see boot() below.
NXQ_QEMU_ACCEL=${NXQ_QEMU_ACCEL:-tcg,thread=single}
# The daemon pass spends its time in a userspace authority under TCG: 216 s
# seen on a loaded 2-core host (60 s idle).
vm_timeout_daemon=${NXQ_VM_TIMEOUT:-360}
scen_timeout=${NXQ_SCEN_TIMEOUT:-60}
splat='WARNING:|BUG:|Oops|Call Trace|lockdep|possible circular locking|KASAN|UBSAN|refcount_t|list_add corruption|general protection'

demo=0
bench=0
authority=module
admin=sysfs
sdir=tests/vm/scenarios
ko_dir=
dmem_ko=
kernel_list="scripts/deps.sh --print"
need_dmem=0
want_kernels=()
want_scen=()
while [ $# -gt 0 ]; do
	case "$1" in
	--demo) demo=1 ;;
	--bench) bench=1; sdir=tests/vm/bench ;;
	--kernel) [ $# -ge 2 ] || { echo "vm: --kernel needs a value" >&2; exit 2; }
		want_kernels+=("$2"); shift ;;
	--kernel=*) want_kernels+=("${1#*=}") ;;
	--authority) [ $# -ge 2 ] || { echo "vm: --authority needs a value" >&2; exit 2; }
		authority=$2; shift ;;
	--authority=*) authority=${1#*=} ;;
	--admin) [ $# -ge 2 ] || { echo "vm: --admin needs a value" >&2; exit 2; }
		admin=$2; shift ;;
	--admin=*) admin=${1#*=} ;;
	--kernel-list) [ $# -ge 2 ] || { echo "vm: --kernel-list needs a value" >&2; exit 2; }
		kernel_list=$2; shift ;;
	--dmem) need_dmem=1 ;;
	--ko-dir) [ $# -ge 2 ] || { echo "vm: --ko-dir needs a value" >&2; exit 2; }
		ko_dir=$(cd "$2" && pwd) || exit 2; shift ;;
	-h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "vm: unknown option $1" >&2; exit 2 ;;
	*) want_scen+=("${1%.c}") ;;
	esac
	shift
done

case "$authority" in
module) auths=(module) ;;
daemon) auths=(daemon) ;;
both) auths=(module daemon) ;;
*) echo "vm: --authority module, daemon or both, not $authority" >&2; exit 2 ;;
esac
case "$admin" in
sysfs|genl) ;;
*) echo "vm: --admin sysfs or genl, not $admin" >&2; exit 2 ;;
esac

npass=0 nfail=0 nskip=0
report() {	# kver name status reason
	local st
	case "$3" in
	pass) st=PASS; npass=$((npass + 1)) ;;
	skip) st=SKIP; nskip=$((nskip + 1)) ;;
	*) st=FAIL; nfail=$((nfail + 1)) ;;
	esac
	printf 'vm: %-22s %-16s %s %s\n' "$1" "$2" "$st" "$4"
}
summary() {
	echo "vm: $npass passed, $nfail failed, $nskip skipped"
	[ "$nfail" -eq 0 ]
	exit $?
}
setup_fail() {	# reason: the run cannot even start
	report host setup fail "$*"
	summary
}

# ---- what the host needs ------------------------------------------------

for t in qemu-system-x86_64 gcc cpio gzip make; do
	command -v "$t" >/dev/null || setup_fail "$t not installed (scripts/deps.sh installs it)"
done
busybox=/bin/busybox
[ -x "$busybox" ] || setup_fail "no $busybox (package busybox-static)"
if LC_ALL=C readelf -l "$busybox" 2>/dev/null | grep -q 'program interpreter'; then
	setup_fail "$busybox is dynamically linked (install busybox-static)"
fi

kernels=()
while read -r kver img kdir; do
	[ -n "$kver" ] && kernels+=("$kver $img $kdir")
done < <($kernel_list)
[ ${#kernels[@]} -gt 0 ] || setup_fail "$kernel_list listed no kernel"

kmatch() {	# kver wanted
	[ "$1" = "$2" ] || [[ "$1" == "$2".* ]] || [[ "$1" == "$2"-* ]] ||
		[[ "$1" == "$2"+* ]]
}
[ $demo = 1 ] && [ ${#want_kernels[@]} -eq 0 ] && want_kernels=(6.12)
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

# ---- userspace programs (kernel-independent, built once) ----------------

cflags=(-static -O2 -Wall -Werror -Iinclude/uapi -Itests/vm)
# authority.h reads devices/KEY/waiters over netlink once the family has it
! grep -q NXQUOTA_A_DEVICE_WAITERS include/uapi/linux/nxquota.h ||
	cflags+=(-DSC_HAVE_DEVICE_WAITERS)
# ... and devices/KEY/events_dropped_by_type once it has its attributes (issue 22)
! grep -q NXQUOTA_A_DEVICE_EVENTS_DROPPED_KILLED include/uapi/linux/nxquota.h ||
	cflags+=(-DSC_HAVE_EVENTS_DROPPED_TYPE)
bin=$out/bin
mkdir -p "$bin" "$bin/tools"

scen=()		# scenarios to run
declare -A pre	# name -> "skip reason" or "fail reason", decided on the host
if [ ${#want_scen[@]} -gt 0 ]; then
	for s in "${want_scen[@]}"; do
		[ -f "$sdir/$s.c" ] || { echo "vm: no scenario $s in $sdir" >&2; exit 2; }
		scen+=("$s")
	done
elif [ $demo = 0 ]; then
	for f in "$sdir"/*.c; do
		[ -f "$f" ] && scen+=("$(basename "$f" .c)")
	done
fi

build_prog() {	# src dst [extra args...]
	local src=$1 dst=$2
	shift 2
	if ! gcc "${cflags[@]}" -o "$dst" "$src" "$@" > "$dst.log" 2>&1; then
		sed 's/^/    /' "$dst.log" >&2
		return 1
	fi
}

for s in "${scen[@]}"; do
	src=$sdir/$s.c
	if [[ $s == lib_* ]]; then
		if [ ! -f lib/libnxquota.a ]; then
			pre[$s]="skip library not built (lib/libnxquota.a missing)"
			continue
		fi
		build_prog "$src" "$bin/$s" -Iinclude lib/libnxquota.a -lpthread ||
			pre[$s]="fail does not build: see $bin/$s.log"
	else
		build_prog "$src" "$bin/$s" || pre[$s]="fail does not build: see $bin/$s.log"
	fi
done
tools=()
for f in tests/vm/tools/*.c; do
	[ -f "$f" ] || continue
	t=$(basename "$f" .c)
	build_prog "$f" "$bin/tools/$t" || setup_fail "tool $t does not build"
	tools+=("$t")
done
# libnxquota's test holder (press_lib_callback skips without it).
rm -f "$bin/tools/nxq-libholder"
if [ -f lib/libnxquota.a ] && [ -f lib/tests-vm/nxq-libholder.c ] &&
	build_prog lib/tests-vm/nxq-libholder.c "$bin/tools/nxq-libholder" \
		-Iinclude lib/libnxquota.a -lpthread; then
	tools+=(nxq-libholder)
fi

# nxquotad for the daemon pass: built static here (no ASan: busybox VM).
daemon_why=
if [[ " ${auths[*]} " == *" daemon "* ]]; then
	if ! nice -n 10 make -s -C daemon static > "$out/daemon-build.log" 2>&1; then
		tail -n 20 "$out/daemon-build.log" | sed 's/^/    /' >&2
		daemon_why="nxquotad does not build: see $out/daemon-build.log"
	elif [ ! -x "$daemon_bin" ]; then
		daemon_why="make -C daemon static made no $daemon_bin"
	fi
fi

# ---- one kernel -----------------------------------------------------------

# Pack build/vm/KVER/initramfs.cpio.gz: busybox, /init, the module, the
# programs that built, and /etc/nxq.conf.
pack() {	# kver ko mode scenario...
	local kver=$1 ko=$2 mode=$3 root a
	shift 3
	root=$out/$kver/root
	rm -rf "$root"
	mkdir -p "$root"/{bin,dev,proc,sys,tmp,etc,lib,scen,tools,root,usr}
	cp "$busybox" "$root/bin/busybox"
	for a in $("$busybox" --list); do
		[ "$a" = busybox ] || ln -s busybox "$root/bin/$a"
	done
	ln -s bin "$root/sbin"
	ln -s ../bin "$root/usr/bin"
	ln -s ../bin "$root/usr/sbin"
	install -m 755 tests/vm/init.sh "$root/init"
	[ ! -f tests/vm/demo.sh ] || install -m 755 tests/vm/demo.sh "$root/demo.sh"
	[ -z "$ko" ] || install -m 644 "$ko" "$root/lib/nxquota.ko"
	[ -z "$dmem_ko" ] || install -m 644 "$dmem_ko" "$root/lib/nxq_dmem_fake.ko"
	[ "$auth" != daemon ] || install -m 755 "$daemon_bin" "$root/bin/nxquotad"
	for a in "$@"; do
		install -m 755 "$bin/$a" "$root/scen/$a"
	done
	for a in "${tools[@]}"; do
		install -m 755 "$bin/tools/$a" "$root/tools/$a"
	done
	# nxquotactl, when built static (make -C tools static): nl_tool uses it.
	[ ! -x tools/nxquotactl-static ] ||
		install -m 755 tools/nxquotactl-static "$root/tools/nxquotactl"
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' > "$root/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' > "$root/etc/group"
	cat > "$root/etc/nxq.conf" <<-EOF
	NXQ_MODE=$mode
	NXQ_SCENARIOS="$*"
	NXQ_TIMEOUT=$scen_timeout
	export NXQ_AUTHORITY=$auth
	EOF
	[ "$admin" != genl ] || echo "export NXQ_ADMIN=genl" >> "$root/etc/nxq.conf"
	# Knobs of the race, fuzz and bench programs and the harness's
	# per-test limit (numbers only) go along.
	env | grep -E '^NXQ_((RACE|FUZZ|BENCH)_[A-Z0-9_]*|TEST_TIMEOUT)=[0-9]+$' |
		sed 's/^/export /' >> "$root/etc/nxq.conf"
	(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) |
		gzip -1 > "$out/$kver/initramfs.cpio.gz"
}

# Boot it; the console goes to build/vm/KVER/console.log ($1's dir).  In
# demo mode the demo's own lines are also shown live, without the kernel's.
# tsc=reliable: under TCG the clocksource watchdog may find the TSC skewed
# against the HPET at any time and switch clocksources, flipping a static
# key after boot.
#
# thread=single: the kernel flips static keys (sched_clock_stable, memcg's
# kmem key when the first memory cgroup appears, cgroup BPF's keys on
# every device-program attach and detach, schedstats) with text_poke's
# int3 while the other vCPUs run.  Multi-threaded TCG lets a vCPU run the
# int3 after the poke's sync, which the kernel reports as "Oops: int3" and
# panics on; toggling kernel.sched_schedstats under load does it on 6.12
# in seconds, and a podman run did it in CI.  With every vCPU on one host
# thread the poke's sync holds: the same toggling ran 6,000 flips without
# an Oops.  The vCPUs still interleave (a slice each, and at every
# interrupt), but are no longer simultaneous.  NXQ_QEMU_ACCEL=tcg puts
# multi-threaded TCG back (tests/vm/containers/run.sh takes it too).
boot() {	# kver img [log suffix]
	local kver=$1 img=$2 log=$out/$1/console${3:-}.log rc
	local vt=$vm_timeout
	[ "${3:-}" != -daemon ] || vt=$vm_timeout_daemon
	local qemu=(timeout -k 5 "$vt" qemu-system-x86_64 -accel "$NXQ_QEMU_ACCEL"
		-m 1024 -smp 2 -nographic -no-reboot -nic none
		-kernel "$img" -initrd "$out/$kver/initramfs.cpio.gz"
		-append "console=ttyS0 panic=-1 loglevel=5 tsc=reliable"
		${NXQ_QEMU_EXTRA:-})
	if [ $demo = 1 ]; then
		"${qemu[@]}" < /dev/null 2>&1 | tr -d '\r' | tee "$log" |
			sed -u -n 's/^.*NXQ-DEMO //p'
		rc=${PIPESTATUS[0]}
	else
		"${qemu[@]}" < /dev/null 2>&1 | tr -d '\r' > "$log"
		rc=${PIPESTATUS[0]}
	fi
	return "$rc"
}

# Kernel-log lines that are splats: printk lines ("[ 12.345678] ...") on
# the console and in the dmesg dump that /init prints at the end.
splats() {	# log
	grep -a -E '\[ *[0-9]+\.[0-9]+\] ' "$1" | grep -a -v 'NXQ-' |
		grep -a -E "$splat" | sort -u
}

# The demo's charge data: the CSV /init prints between NXQ-CSV-BEGIN and
# NXQ-CSV-END -> build/demo/charge.csv, and its chart drawn by gnuplot
# (tests/vm/demo-chart.gp) -> build/demo/charge.png.
demo_data() {	# kver log
	local d=build/demo csv=build/demo/charge.csv png=build/demo/charge.png
	mkdir -p "$d"
	rm -f "$csv" "$png"
	if ! grep -a -q '^NXQ-CSV-END' "$2"; then
		report "$1" demo-data fail "no NXQ-CSV-BEGIN..END block in $2"
		return
	fi
	sed -n '/^NXQ-CSV-BEGIN/,/^NXQ-CSV-END/p' "$2" |
		grep -a -o '^NXQ-CSV .*' | sed 's/^NXQ-CSV //' > "$csv"
	if ! command -v gnuplot > /dev/null; then
		report "$1" demo-chart fail "gnuplot not installed (scripts/deps.sh installs gnuplot-nox)"
	elif ! gnuplot -e "csv='$csv'; png='$png'" tests/vm/demo-chart.gp \
			> "$d/gnuplot.log" 2>&1 || [ ! -s "$png" ]; then
		report "$1" demo-chart fail "gnuplot failed: see $d/gnuplot.log"
	fi
	echo "data: $csv, chart: $png"
}

run_kernel() {	# kver img kdir
	local kver=$1 img=$2 kdir=$3 ko s t0 secs rc line st why=
	local run=() label=$1 sfx=
	mkdir -p "$out/$kver"
	if [ "$auth" = daemon ]; then
		label=$kver/daemon
		sfx=-daemon
	fi
	rm -f "$out/$kver/console$sfx.log"

	if [ "$auth" = daemon ]; then
		ko=
		why=$daemon_why
	elif [ -n "$ko_dir" ]; then
		ko=$ko_dir/$kver/nxquota.ko
	else
		ko=build/kmod/$kver/nxquota.ko
		if [ ! -f kmod/Makefile ]; then
			why="kmod/Makefile missing"
		elif ! make -C kmod KDIR="$kdir" O_SUFFIX="$kver" \
				> "$out/$kver/kmod-build.log" 2>&1; then
			tail -n 20 "$out/$kver/kmod-build.log" | sed 's/^/    /' >&2
			why="does not build: see $out/$kver/kmod-build.log"
		fi
	fi
	[ -z "$why" ] && [ -n "$ko" ] && [ ! -f "$ko" ] && why="no $ko"
	# The fake dmem driver (dmem_coexist), for kernels with the controller:
	# built out of tree in build/kmod/KVER/dmem-driver/, for both passes.
	dmem_ko=
	if grep -qx 'CONFIG_CGROUP_DMEM=y' "$kdir/.config" 2>/dev/null; then
		local dd=$top/build/kmod/$kver/dmem-driver
		mkdir -p "$dd"
		cp -f tests/vm/dmem-driver/Kbuild tests/vm/dmem-driver/*.c "$dd/"
		if make -C "$kdir" M="$dd" modules > "$dd/build.log" 2>&1; then
			dmem_ko=$dd/nxq_dmem_fake.ko
		else
			tail -n 20 "$dd/build.log" | sed 's/^/    /' >&2
			report "$label" dmem-driver fail "tests/vm/dmem-driver does not build: see $dd/build.log"
		fi
	fi
	if [ -n "$why" ]; then
		report "$label" "$auth" fail "$why"
		for s in "${scen[@]}"; do
			report "$label" "$s" fail "not run: no $auth"
		done
		return
	fi

	for s in "${scen[@]}"; do
		case "${pre[$s]:-}" in
		"") run+=("$s") ;;
		skip\ *) report "$label" "$s" skip "${pre[$s]#skip }" ;;
		*) report "$label" "$s" fail "${pre[$s]#fail }" ;;
		esac
	done

	pack "$kver" "$ko" "$([ $demo = 1 ] && echo demo || echo test)" "${run[@]}"
	t0=$SECONDS
	boot "$kver" "$img" "$sfx"
	rc=$?
	secs=$((SECONDS - t0))
	local log=$out/$kver/console$sfx.log stopped
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		stopped="the VM timed out after $([ "$auth" = daemon ] && echo "$vm_timeout_daemon" || echo "$vm_timeout")s"
	elif grep -a -q 'Kernel panic' "$log"; then
		stopped="the kernel panicked"
	else
		stopped="the VM stopped early (exit status $rc)"
	fi

	if [ $demo = 1 ]; then
		line=$(grep -a -o 'NXQ-DEMO-EXIT [0-9]*' "$log" | tail -n 1)
		if [ -z "$line" ]; then
			report "$label" demo fail "no exit status: $stopped (see $log)"
		elif [ "${line#NXQ-DEMO-EXIT }" = 0 ]; then
			report "$label" demo pass "ok (${secs}s)"
		else
			report "$label" demo fail "demo.sh failed ($line; see $log)"
		fi
		demo_data "$kver" "$log"
	else
		local last=rmmod
		[ "$auth" = daemon ] && last=nxquotad
		for s in "${run[@]}" "$last"; do
			line=$(grep -a -o "NXQ-RESULT $s .*" "$log" | tail -n 1)
			if [ -z "$line" ]; then
				report "$label" "$s" fail "no result: $stopped"
				continue
			fi
			line=${line#NXQ-RESULT $s }
			st=${line%% *}
			report "$label" "$s" "$st" "${line#"$st" }"
		done
	fi

	[ $bench = 0 ] || grep -a -o 'BENCH .*' "$log" | sed "s/^/vm: $kver /"

	line=$(grep -a -o 'NXQ-BOOT .*' "$log" | head -n 1)
	if [ -z "$line" ]; then
		report "$label" boot fail "the VM never reached /init (see $log)"
	elif [ "${line#NXQ-BOOT }" != "$kver" ]; then
		report "$label" boot fail "booted ${line#NXQ-BOOT }, expected $kver"
	fi
	# The dmem controller: on where the kernel has it (tests/vm/init.sh).
	local dmem
	dmem=$(grep -a -o 'NXQ-DMEM [a-z]*' "$log" | head -n 1 | cut -d' ' -f2)
	if [ "$dmem" = failed ]; then
		report "$label" dmem fail "the kernel has the dmem controller; +dmem in cgroup.subtree_control failed"
	elif [ $need_dmem = 1 ]; then
		[ "$dmem" = on ] && report "$label" dmem pass "on in the root's cgroup.subtree_control" ||
			report "$label" dmem fail "--dmem: the kernel has no dmem controller (NXQ-DMEM ${dmem:-missing})"
	fi
	if ! grep -a -q 'NXQ-DONE' "$log"; then
		report "$label" shutdown fail "/init did not finish: $stopped (see $log)"
	fi
	s=$(splats "$log")
	if [ -n "$s" ]; then
		report "$label" kernel-log fail "$(echo "$s" | wc -l) splat line(s), first: $(echo "$s" | head -n 1)"
		echo "$s" | head -n 20 | sed 's/^/    /'
	fi
	echo "vm: $kver: booted and ran in ${secs}s (dmem: ${dmem:-?}); console log: $log"
}

for k in "${kernels[@]}"; do
	for auth in "${auths[@]}"; do
		# shellcheck disable=SC2086
		run_kernel $k
	done
done
summary
