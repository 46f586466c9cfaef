#!/bin/sh
# /init of the container test VM (busybox ash, PID 1), packed by
# tests/vm/containers/run.sh with busybox, crun, podman, conmon and their
# libraries, /etc/containers, the container rootfs (/ctr/rootfs), the
# scenarios (/containers/scenarios/*.sh), the module (/lib/nxquota.ko) or
# nxquotad (/bin/nxquotad), and /etc/nxq.conf, which sets:
#   NXQ_SCENARIOS  the scenario names, in order
#   NXQ_TIMEOUT    seconds each scenario may run (more for one whose file
#                  has a line "# nxq-timeout: SECONDS")
#   NXQ_AUTHORITY  "module" (insmod /lib/nxquota.ko) or "daemon" (run
#                  /bin/nxquotad; /tools/nxq-sweep removes leftover devices)
#                  or "image" (neither: the scenarios run the node image's
#                  nxquotad with podman, from /image/nxquota.oci.tar)
#
# Stage 1: the initramfs is the kernel's rootfs, where pivot_root(2) fails;
# the runtimes must pivot_root as they do in production, so everything is
# copied into a tmpfs and switch_root makes that the root (stage 2, this
# same script again).
#
# Every line the host reads starts with "NXQ-" (as in tests/vm/init.sh):
#   NXQ-BOOT <kernel release>
#   NXQ-RESULT <name> pass|fail|skip <reason>   one per scenario, then
#   NXQ-RESULT rmmod ... | NXQ-RESULT nxquotad ...  the authority's end
#   (NXQ-RESULT image ...: no nxquotad left running, with the image)
#   NXQ-DMESG-BEGIN / NXQ-DMESG-END             the whole kernel log
#   NXQ-DONE
# A scenario's own output is echoed as "  [name] line".

if [ ! -e /.nxq-stage2 ]; then
	mkdir -p /newroot
	mount -t tmpfs -o mode=755 tmpfs /newroot || {
		echo "NXQ-BOOT stage1: cannot mount a tmpfs"; poweroff -f; }
	for d in /* /.[!.]*; do
		[ -e "$d" ] || [ -L "$d" ] || continue
		case "$d" in
		/newroot) ;;
		/proc|/sys) mkdir -p "/newroot$d" ;;
		*) cp -a "$d" /newroot/ ;;
		esac
	done
	: > /newroot/.nxq-stage2
	exec switch_root /newroot /init
	echo "NXQ-BOOT stage1: switch_root failed"
	poweroff -f
fi

export PATH=/usr/sbin:/usr/bin:/sbin:/bin:/tools
export NXQ_KO=/lib/nxquota.ko
export HOME=/root
umask 022

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm /dev/mqueue
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts /dev/pts
ln -sf pts/ptmx /dev/ptmx 2>/dev/null
mount -t tmpfs -o mode=1777 shm /dev/shm
mount -t mqueue mqueue /dev/mqueue
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=755 tmpfs /run
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mkdir -p /run/lock /var/tmp /var/lib/containers /run/nxq-hook /etc/cdi /run/cdi
chmod 1777 /var/tmp
. /etc/nxq.conf
mkdir -p /.nxq
cp -a /etc/containers /.nxq/etc-containers

echo "NXQ-BOOT $(uname -r)"
read -r up _ < /proc/uptime
echo "NXQ-STAGE2 ${up}s after boot (initramfs unpacked, root copied to tmpfs)"

SPLAT='WARNING:|BUG:|Oops|Call Trace|lockdep|possible circular locking|KASAN|UBSAN|refcount_t|list_add corruption|general protection'
splat_count() { dmesg | grep -cE "$SPLAT"; }

now_cs() {
	read -r up _ < /proc/uptime
	echo $(( ${up%.*} * 100 + 1${up#*.} - 100 ))
}

loaded() { grep -q '^nxquota ' /proc/modules; }
daemon_mode() { [ "${NXQ_AUTHORITY:-module}" = daemon ]; }
image_mode() { [ "${NXQ_AUTHORITY:-module}" = image ]; }

# ---- nxquotad (as tests/vm/init.sh runs it) ----
NXQD_PID=
NXQD_SOCK=/run/nxquota/client/nxquota.sock
NXQD_CTL=/run/nxquota/control.sock
NXQD_CHILD=0
export NXQD_START=/bin/nxquotad NXQD_LOG=/tmp/nxqd.log NXQD_PIDFILE=/tmp/nxqd.pid

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

daemon_bad_log() {
	grep -E 'AddressSanitizer|runtime error|WARNING|BUG|ASSERTION' "$NXQD_LOG" 2>/dev/null
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

result() {	# name status reason...
	n=$1; s=$2; shift 2
	echo "NXQ-RESULT $n $s $*"
}

# ---- after each scenario: what it left behind ----

# Processes reparented to PID 1 (a runtime's daemonized conmon, a podman
# cleanup still running, a container's process): killed.  Builtins only.
kill_leftovers() {
	killed=""
	for p in /proc/[0-9]*; do
		pid=${p#/proc/}
		[ "$pid" = 1 ] && continue
		[ "$pid" = "$NXQD_PID" ] && continue
		read -r stat 2>/dev/null < "$p/stat" || continue
		comm=${stat#*(}
		comm=${comm%)*}
		rest=${stat##*) }
		set -- $rest
		[ "$2" = 1 ] && [ "$1" != Z ] || continue
		kill -9 "$pid" 2>/dev/null || continue
		[ "$comm" = timeout ] || killed="$killed $pid($comm)"
	done
	[ -z "$killed" ] || sleep 1
}

# Containers crun still knows (crun's state is in /run/crun).
sweep_crun() {
	for c in $(crun list -q 2>/dev/null); do
		left="$left crun-container:$c"
		crun delete -f "$c" > /dev/null 2>&1
	done
}

# Containers podman still knows: its database lives under
# /var/lib/containers; a container left there would be seen by the next
# scenario.  "podman ps" is slow under TCG, so only look when a container
# directory exists.
sweep_podman() {
	ls /var/lib/containers/storage/vfs-containers/* > /dev/null 2>&1 ||
		ls /var/lib/containers/storage/libpod/bolt_state.db > /dev/null 2>&1 || return 0
	ids=$(ls -d /var/lib/containers/storage/vfs-containers/*/ 2>/dev/null)
	[ -z "$ids" ] && return 0
	left="$left podman-containers:$(echo "$ids" | wc -l)"
	podman rm -a -f > /dev/null 2>&1
	podman pod rm -a -f > /dev/null 2>&1
}

sweep_cgroups() {
	for c in $(find /sys/fs/cgroup -mindepth 1 -depth -type d 2>/dev/null); do
		for p in $(cat "$c/cgroup.procs" 2>/dev/null); do
			echo "$p" > /sys/fs/cgroup/cgroup.procs 2>/dev/null
		done
		rmdir "$c" 2>/dev/null
		left="$left cgroup:${c#/sys/fs/cgroup}"
	done
}

sweep() {
	left=""
	if daemon_mode; then
		read -r p < "$NXQD_PIDFILE"
		[ "$p" = "$NXQD_PID" ] || { NXQD_PID=$p; NXQD_CHILD=0; }
	fi
	sweep_crun
	kill_leftovers
	[ -n "$killed" ] && left="$left processes:$killed"
	sweep_podman
	if daemon_mode; then
		if ! daemon_alive; then
			wait "$NXQD_PID" 2>/dev/null
			left="$left nxquotad-died"
			daemon_start || left="$left nxquotad-restart-failed"
		fi
		if [ -x /tools/nxq-sweep ]; then
			for d in $(/tools/nxq-sweep 2>/tmp/sweep.err); do
				left="$left $d"
			done
			[ -s /tmp/sweep.err ] && left="$left sweep:$(head -n 1 /tmp/sweep.err)"
		fi
	elif image_mode; then
		# the image's container went with sweep_podman; what it left on
		# the host goes quietly (the scenario checks it itself)
		rm -rf /opt/nxquota /var/lib/nxquota/*
	else
		if ! loaded; then
			left="$left module-unloaded"
			load_module || left="$left insmod-failed"
		fi
		chown 0:0 /dev/nxquota 2>/dev/null
		chmod 0600 /dev/nxquota 2>/dev/null
		for d in /sys/kernel/nxquota/devices/*/; do
			[ -d "$d" ] || continue
			key=$(basename "$d")
			left="$left device:$key"
			echo "$key" > /sys/kernel/nxquota/devices/unregister 2>/dev/null
		done
	fi
	sweep_cgroups
	# nxquota-hook's records (/run/nxquota/hooks/<id>): a container whose
	# poststop did not clear what its createRuntime set.
	for r in /run/nxquota/hooks/*; do
		[ -e "$r" ] || continue
		left="$left hook-record:${r##*/}"
		rm -f "$r"
	done
	# What the scenario put in the runtimes' configuration goes, quietly:
	# CDI specs, hook records, bundles; /etc/containers as it was at boot.
	rm -rf /etc/cdi/* /run/cdi/* /run/nxq-hook/* /run/bundles /run/nxq-x
	rm -rf /etc/containers
	cp -a /.nxq/etc-containers /etc/containers
}

# ---- the authority ----

if image_mode; then
	echo "NXQ-IMAGE $(ls -l /image/nxquota.oci.tar 2>&1)"
elif daemon_mode; then
	if ! daemon_start; then
		sed 's/^/  [nxquotad] /' "$NXQD_LOG"
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
else
	echo "NXQ-LOADED $(cat /sys/kernel/nxquota/abi_version 2>/dev/null)"
fi

echo "NXQ-VERSIONS $(crun --version | head -n 1); $(podman --version 2>&1); $(conmon --version 2>&1 | head -n 1)"

# ---- the scenarios ----

for name in $NXQ_SCENARIOS; do
	echo "NXQ-START $name"
	before=$(splat_count)
	# a scenario may ask for more time: a line "# nxq-timeout: SECONDS"
	tmo=$(sed -n 's/^# nxq-timeout: \([0-9][0-9]*\)$/\1/p' "/containers/scenarios/$name.sh")
	[ -n "$tmo" ] && [ "$tmo" -gt "$NXQ_TIMEOUT" ] || tmo=$NXQ_TIMEOUT
	t0=$(now_cs)
	{ timeout -s KILL "$tmo" sh "/containers/scenarios/$name.sh" 2>&1
	  echo $? > /tmp/rc; } | tee /tmp/out | sed "s/^/  [$name] /"
	rc=$(cat /tmp/rc)
	t1=$(now_cs)
	secs=$(( (t1 - t0) / 100 )).$(( (t1 - t0) % 100 / 10 ))
	why=$(grep -m1 -E '^(FAIL|SKIP): ' /tmp/out | cut -d' ' -f2-)
	case "$rc" in
	0)	status=pass; why="ok" ;;
	77)	status=skip; [ -n "$why" ] || why="no reason given" ;;
	137)	status=fail
		if [ $(( t1 - t0 )) -ge $(( tmo * 100 )) ]; then
			why="timed out after ${tmo}s${why:+: $why}"
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

# ---- the authority's end (as tests/vm/init.sh) ----

if image_mode; then
	left=
	for p in /proc/[0-9]*; do
		read -r c 2>/dev/null < "$p/comm" || continue
		[ "$c" = nxquotad ] && left="$left ${p#/proc/}"
	done
	if [ -n "$left" ]; then
		result image fail "nxquotad still running:$left"
	else
		result image pass "ok"
	fi
	finish
fi

if daemon_mode; then
	kill -TERM "$NXQD_PID" 2>/dev/null
	i=0
	while daemon_alive && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	sed 's/^/  [nxquotad] /' "$NXQD_LOG" | tail -n 40
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
