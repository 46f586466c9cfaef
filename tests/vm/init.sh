#!/bin/sh
# /init of the nxquota test VM (busybox ash, PID 1).  tests/vm/run.sh packs
# it with busybox, the module (/lib/nxquota.ko), the scenario programs
# (/scen/*), the tools (/tools/*), demo.sh and /etc/nxq.conf, which sets:
#   NXQ_MODE      "test" (run the scenarios) or "demo" (run /demo.sh)
#   NXQ_SCENARIOS the scenario names, in order
#   NXQ_TIMEOUT   seconds each scenario may run
#   NXQ_AUTHORITY "module" (default) or "daemon": the module is not loaded;
#                 /bin/nxquotad runs (restarted if a scenario killed it),
#                 the scenarios talk to its sockets, /tools/nxq-sweep
#                 removes leftover devices, and the last result is
#                 "nxquotad" (it exits 0 on SIGTERM, its log is clean)
#
# Every line the host reads starts with "NXQ-":
#   NXQ-BOOT <kernel release>
#   NXQ-DMEM on|absent|failed                     the dmem controller
#   NXQ-RESULT <name> pass|fail|skip <reason>    one per scenario, then
#   NXQ-RESULT rmmod ...                          the final unload
#   NXQ-RESULT nxquotad ...                       or the daemon's exit
#   NXQ-DMESG-BEGIN / NXQ-DMESG-END               the whole kernel log
#   NXQ-DEMO <line>                               demo mode: the narrative
#   NXQ-CSV-BEGIN / NXQ-CSV <line> / NXQ-CSV-END  demo mode: its charge.csv
#   NXQ-DONE
# A scenario's own output is echoed as "  [name] line".

export PATH=/bin:/tools
export NXQ_KO=/lib/nxquota.ko
umask 022

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t cgroup2 cgroup2 /sys/fs/cgroup
. /etc/nxq.conf

# The dmem controller (CONFIG_CGROUP_DMEM, 6.14 and later), where the
# kernel has it: on for the whole tree, as on a node whose GPU driver
# charges dmem; the scenarios run beside it (Documentation/dmem.rst).
# NXQ-DMEM says which: on, absent, or failed (a failure of the run).
if grep -qw dmem /sys/fs/cgroup/cgroup.controllers; then
	if echo +dmem > /sys/fs/cgroup/cgroup.subtree_control &&
	   grep -qw dmem /sys/fs/cgroup/cgroup.subtree_control; then
		NXQ_DMEM=on
	else
		NXQ_DMEM=failed
	fi
else
	NXQ_DMEM=absent
fi

SPLAT='WARNING:|BUG:|Oops|Call Trace|lockdep|possible circular locking|KASAN|UBSAN|refcount_t|list_add corruption|general protection'

splat_count() { dmesg | grep -cE "$SPLAT"; }

# Centiseconds since boot.
now_cs() {
	read -r up _ < /proc/uptime
	echo $(( ${up%.*} * 100 + 1${up#*.} - 100 ))
}

loaded() { grep -q '^nxquota ' /proc/modules; }

# ---- nxquotad (NXQ_AUTHORITY=daemon) ----
NXQD_PID=
NXQD_SOCK=/run/nxquota/client/nxquota.sock
NXQD_CTL=/run/nxquota/control.sock
NXQD_CHILD=0
daemon_mode() { [ "${NXQ_AUTHORITY:-module}" = daemon ]; }
# A scenario that restarts the daemon (daemon_restart) starts "$NXQD_START"
# with its output appended to $NXQD_LOG and writes the new pid to
# $NXQD_PIDFILE; sweep adopts it.
export NXQD_START=/bin/nxquotad NXQD_LOG=/tmp/nxqd.log NXQD_PIDFILE=/tmp/nxqd.pid

# Start the daemon and wait (5 s) for both its sockets.
daemon_start() {
	mkdir -p /var/lib/nxquota	# /run/nxquota/client: nxquotad makes it
	$NXQD_START >> "$NXQD_LOG" 2>&1 &
	NXQD_PID=$!
	NXQD_CHILD=1
	echo "$NXQD_PID" > "$NXQD_PIDFILE"
	i=0
	while [ $i -lt 50 ]; do
		[ -S "$NXQD_SOCK" ] && [ -S "$NXQD_CTL" ] && return 0
		kill -0 "$NXQD_PID" 2>/dev/null || return 1
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

daemon_alive() {
	[ -n "$NXQD_PID" ] && [ -d "/proc/$NXQD_PID" ] &&
		! grep -q '^State:.*Z' "/proc/$NXQD_PID/status" 2>/dev/null
}

# Lines of the daemon's log that are failures.
daemon_bad_log() {
	grep -E 'AddressSanitizer|runtime error|WARNING|BUG|ASSERTION' /tmp/nxqd.log 2>/dev/null
}

load_module() {
	insmod "$NXQ_KO" || return 1
	[ -c /dev/nxquota ] && [ -d /sys/kernel/nxquota ]
}

finish() {
	echo "NXQ-DMESG-BEGIN"
	dmesg
	echo "NXQ-DMESG-END"
	echo "NXQ-DONE"
	sync
	poweroff -f
	sleep 5
}

echo "NXQ-BOOT $(uname -r)"
echo "NXQ-DMEM $NXQ_DMEM"

if [ "$NXQ_MODE" = demo ]; then
	# demo.sh loads the module itself, to show it.
	{ sh /demo.sh 2>&1; echo "rc=$?" > /tmp/demo.rc; } | sed 's/^/NXQ-DEMO /'
	echo "NXQ-DEMO-EXIT $(cut -d= -f2 /tmp/demo.rc)"
	if [ -f /tmp/charge.csv ]; then
		echo "NXQ-CSV-BEGIN"
		sed 's/^/NXQ-CSV /' /tmp/charge.csv
		echo "NXQ-CSV-END"
	fi
	finish
fi

# Kill every process left by a scenario (they were reparented to PID 1).
# Must run in PID 1 itself, not in a $(subshell), which is also a child of
# PID 1; builtins only, so it forks nothing it could kill.
kill_leftovers() {
	killed=""
	for p in /proc/[0-9]*; do
		pid=${p#/proc/}
		[ "$pid" = 1 ] && continue
		[ "$pid" = "$NXQD_PID" ] && continue
		read -r stat < "$p/stat" 2>/dev/null || continue
		comm=${stat#*(}
		comm=${comm%)*}
		rest=${stat##*) }
		set -- $rest
		# $1 state, $2 parent; zombies are already gone (files released)
		[ "$2" = 1 ] && [ "$1" != Z ] || continue
		kill -9 "$pid" 2>/dev/null || continue
		# busybox timeout's watcher outlives the program by up to 1s
		[ "$comm" = timeout ] || killed="$killed $pid($comm)"
	done
	[ -z "$killed" ] || sleep 1
}

# Put the module back into a clean state; $left says what had to be cleaned.
sweep() {
	left=""
	if daemon_mode; then
		read -r p < "$NXQD_PIDFILE"
		[ "$p" = "$NXQD_PID" ] || { NXQD_PID=$p; NXQD_CHILD=0; }
	fi
	kill_leftovers
	[ -n "$killed" ] && left="$left processes:$killed"
	if daemon_mode; then
		sweep_daemon
		return
	fi
	if ! loaded; then
		left="$left module-unloaded"
		load_module || left="$left insmod-failed"
	fi
	# The module creates its node root-only; a scenario that gave it to
	# a group (as the udev rule does) must not leak that to the next.
	chown 0:0 /dev/nxquota 2>/dev/null
	chmod 0600 /dev/nxquota 2>/dev/null
	for d in /sys/kernel/nxquota/devices/*/; do
		[ -d "$d" ] || continue
		key=$(basename "$d")
		left="$left device:$key"
		echo "$key" > /sys/kernel/nxquota/devices/unregister 2>/dev/null
	done
	sweep_cgroups
}

# The daemon's side of sweep: alive, its socket root's, no device left.
sweep_daemon() {
	if ! daemon_alive; then
		wait "$NXQD_PID" 2>/dev/null
		left="$left nxquotad-died"
		daemon_start || left="$left nxquotad-restart-failed"
	fi
	chown 0:0 "$NXQD_SOCK" 2>/dev/null
	chmod 0600 "$NXQD_SOCK" 2>/dev/null
	for d in $(/tools/nxq-sweep 2>/tmp/sweep.err); do
		left="$left $d"
	done
	[ -s /tmp/sweep.err ] && left="$left sweep:$(head -n 1 /tmp/sweep.err)"
	sweep_cgroups
}

# Every cgroup a scenario left: its processes to the root, then rmdir.
sweep_cgroups() {
	for c in $(find /sys/fs/cgroup -mindepth 1 -depth -type d 2>/dev/null); do
		for p in $(cat "$c/cgroup.procs" 2>/dev/null); do
			echo "$p" > /sys/fs/cgroup/cgroup.procs 2>/dev/null
		done
		rmdir "$c" 2>/dev/null
		left="$left cgroup:${c#/sys/fs/cgroup}"
	done
}

result() {	# name status reason...
	n=$1; s=$2; shift 2
	echo "NXQ-RESULT $n $s $*"
}

if daemon_mode; then
	if ! daemon_start; then
		sed 's/^/  [nxquotad] /' /tmp/nxqd.log
		for name in $NXQ_SCENARIOS; do
			result "$name" fail "nxquotad did not start (its log is above)"
		done
		result nxquotad fail "did not start"
		finish
	fi
	echo "NXQ-DAEMON $NXQD_PID"
elif ! load_module; then
	for name in $NXQ_SCENARIOS; do
		result "$name" fail "insmod failed or /dev/nxquota, /sys/kernel/nxquota missing"
	done
	result rmmod fail "module never loaded"
	finish
fi
daemon_mode || echo "NXQ-LOADED $(cat /sys/kernel/nxquota/abi_version 2>/dev/null)"

for name in $NXQ_SCENARIOS; do
	echo "NXQ-START $name"
	before=$(splat_count)
	t0=$(now_cs)
	{ timeout -s KILL "$NXQ_TIMEOUT" "/scen/$name" 2>&1; echo $? > /tmp/rc; } |
		tee /tmp/out | sed "s/^/  [$name] /"
	rc=$(cat /tmp/rc)
	t1=$(now_cs)
	secs=$(( (t1 - t0) / 100 )).$(( (t1 - t0) % 100 / 10 ))
	why=$(grep -m1 -E '^(FAIL|SKIP): ' /tmp/out | cut -d' ' -f2-)
	case "$rc" in
	0)	status=pass; why="ok" ;;
	77)	status=skip; [ -n "$why" ] || why="no reason given" ;;
	137)	status=fail
		if [ $(( t1 - t0 )) -ge $(( NXQ_TIMEOUT * 100 )) ]; then
			why="timed out after ${NXQ_TIMEOUT}s"
		else
			why="killed by SIGKILL${why:+: $why}"
		fi ;;
	*)	status=fail
		[ -n "$why" ] || why="exit status $rc, no FAIL line"
		[ "$rc" -gt 128 ] && why="killed by signal $((rc - 128))${why:+; $why}" ;;
	esac
	sweep
	if [ -n "$left" ] && [ "$status" = pass ]; then
		status=fail; why="left behind:$left"
	fi
	after=$(splat_count)
	if [ "$after" != "$before" ]; then
		status=fail
		why="kernel log splat: $(dmesg | grep -E "$SPLAT" | sed -n "$((before + 1))p")"
	fi
	result "$name" "$status" "$why (${secs}s)"
done

# The daemon's end: SIGTERM, exit 0 within 5 s, nothing bad in its log.
if daemon_mode; then
	kill -TERM "$NXQD_PID" 2>/dev/null
	i=0
	while daemon_alive && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	sed 's/^/  [nxquotad] /' /tmp/nxqd.log | tail -n 40
	st=0
	[ "$NXQD_CHILD" = 1 ] && ! daemon_alive && { wait "$NXQD_PID"; st=$?; }
	if daemon_alive; then
		result nxquotad fail "still running 5 s after SIGTERM"
	elif [ "$st" != 0 ]; then
		result nxquotad fail "exited with status $st on SIGTERM"
	elif [ -n "$(daemon_bad_log)" ]; then
		result nxquotad fail "its log: $(daemon_bad_log | head -n 1)"
	else
		result nxquotad pass "ok"
	fi
	finish
fi

# The final unload: nothing may be open, and it must take everything away.
before=$(splat_count)
if ! rmmod nxquota; then
	result rmmod fail "rmmod nxquota refused with no user left"
elif loaded || [ -e /dev/nxquota ] || [ -e /sys/kernel/nxquota ]; then
	result rmmod fail "module, /dev/nxquota or /sys/kernel/nxquota still there"
elif [ "$(splat_count)" != "$before" ]; then
	result rmmod fail "kernel log splat during rmmod"
else
	result rmmod pass "ok"
fi

finish
