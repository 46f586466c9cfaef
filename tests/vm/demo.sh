#!/bin/sh
# tests/vm/demo.sh - the scripted session `make demo` shows.  Runs as root
# inside the test VM (busybox sh), started by /init in demo mode; the host
# shows only this script's output.  It checks what it shows: an outcome
# other than the expected one is printed as UNEXPECTED and makes the demo
# (and make demo) fail.
#
# Story: one 1 GiB device, two containers whose budgets add up to more than
# the device; charges granted and refused with the kernel's errno; a
# process SIGKILLed and its charge gone with it.  Then lending: an idle
# container's guarantee (min) is lent to the other, called back through a
# pressure ticket when it grows (timeline of the ticket, the release and
# the grant), and, as the last resort, a borrower that ignores its ticket
# killed at the waiter's deadline.
#
# Data for the chart: nxq-sample records each group's sysfs current (about
# every millisecond, a line when it changes and every 100 ms) and this
# script adds events (wait, ticket, release, grant, kill) on the same
# clock; at the end both are merged into /tmp/charge.csv, which /init
# prints between NXQ-CSV-BEGIN and NXQ-CSV-END for the host (run.sh) to
# keep as build/demo/charge.csv.  Columns, in its header line:
#   t_ms,event,group,current_bytes,detail
# t_ms: milliseconds since the first sample; event: "sample" (current_bytes
# is the group's node's current) or an event (current_bytes empty, detail
# the holder's own line or what happened).

S=/sys/kernel/nxquota
KEY=GPU-demo0
D=$S/devices/$KEY
rc=0

say() { echo; echo "== $*"; }
run() { echo "\$ $*"; sh -c "$*" || { echo "UNEXPECTED: failed"; rc=1; }; }
mib() { echo "$(( $1 / 1048576 )) MiB"; }
cgid() { stat -c %i "/sys/fs/cgroup$1"; }

# Show a sysfs number (bytes also in MiB); check it when a value is given.
show() {	# file [expected]
	v=$(cat "$1")
	case "$1" in
	*/current|*/used|*/capacity|*/max)
		printf '   %-52s %12s  (%s)\n' "${1#$S/}" "$v" "$(mib "$v")" ;;
	*)	printf '   %-52s %12s\n' "${1#$S/}" "$v" ;;
	esac
	if [ -n "${2:-}" ] && [ "$v" != "$2" ]; then
		echo "UNEXPECTED: expected $2"
		rc=1
	fi
}

# Holders are nxq-hold processes fed through FIFOs: A on fds 3/4, B on 5/6.
# Each has an eventfd: a holder the module cannot ask cannot borrow (charge
# its cgroup above the cgroup's effective min, 0 here).
start() {	# name cgroup fd-in fd-out
	mkfifo "/tmp/$1.in" "/tmp/$1.out"
	nxq-hold "$1" "$KEY" "$2" --eventfd < "/tmp/$1.in" > "/tmp/$1.out" &
	eval "pid_$1=$!"
	eval "exec $3>/tmp/$1.in $4</tmp/$1.out"
}

ask() {		# name fd-in fd-out command expected-word
	echo "$4" >&"$2"
	read -r line <&"$3"
	echo "   $line"
	case "$line" in
	*"$5"*) ;;
	*) echo "UNEXPECTED: expected \"$5\""; rc=1 ;;
	esac
}
inference() { ask inference 3 4 "$@"; }
training() { ask training 5 6 "$@"; }

# The same, for holders that take more options (--eventfd) and whose FIFOs
# are named apart from the holder's name.
start_as() {	# fifo-id name cgroup fd-in fd-out [option]
	mkfifo "/tmp/$1.in" "/tmp/$1.out"
	nxq-hold "$2" "$KEY" "$3" ${6:-} < "/tmp/$1.in" > "/tmp/$1.out" &
	eval "pid_$1=$!"
	eval "exec $4>/tmp/$1.in $5</tmp/$1.out"
}

# Events for the CSV: "USEC,event,group,,detail" in /tmp/events.
mark() {	# usec event group detail
	echo "$1,$2,$3,,$(echo "$4" | tr -d ',')" >> /tmp/events
}
# The event a holder's timeline line is, if any.
mark_line() {	# "@USEC [name] ..."
	us=${1%% *}; us=${us#@}
	g=${1#*\[}; g=${g%%]*}
	case "$1" in
	*"waiting up to"*) mark "$us" wait "$g" "${1#@* }" ;;
	*"ticket "*": asked"*) mark "$us" ticket "$g" "${1#@* }" ;;
	*"releasing "*) mark "$us" release "$g" "${1#@* }" ;;
	*"granted after"*) mark "$us" grant "$g" "${1#@* }" ;;
	esac
}

# Timeline lines ("@USEC [name] ..."): kept in /tmp/timeline, shown sorted
# by time, relative to the first, by timeline().
tl_read() {	# fd-out expected-word
	read -r line <&"$1"
	echo "$line" >> /tmp/timeline
	mark_line "$line"
	case "$line" in
	*"$2"*) ;;
	*) echo "   ${line#@* }"; echo "UNEXPECTED: expected \"$2\""; rc=1 ;;
	esac
}
tl_ask() {	# fd-in fd-out command expected-word
	echo "$3" >&"$1"
	tl_read "$2" "$4"
}
timeline() {
	sed 's/^@//' /tmp/timeline | sort -n | awk '
		NR == 1 { t0 = $1 }
		{ t = $1; $1 = ""; printf "   %+10.3f ms %s\n", (t - t0) / 1000, $0 }'
	: > /tmp/timeline
}
lender() { ask lend 7 8 "$@"; }

echo "nxquota demo on Linux $(uname -r): per-cgroup device-memory budgets"
echo "(bytes are charge, not residency: what holders asked the kernel for)"

say "Load the module"
run "insmod /lib/nxquota.ko"
run "ls -l /dev/nxquota"
show $S/abi_version 3

say "Register a device of 1 GiB (root only)"
run "echo '$KEY 1G' > $S/devices/register"
show "$D/capacity" 1073741824
show "$D/used" 0

say "Two containers (cgroups) with budgets: 600 MiB + 700 MiB > 1 GiB"
run "mkdir /sys/fs/cgroup/inference /sys/fs/cgroup/training"
run "echo '/inference max=600M' > $D/set_budget"
run "echo '/training max=700M' > $D/set_budget"
I=$D/nodes/$(cgid /inference)
T=$D/nodes/$(cgid /training)
show "$I/max" 629145600
show "$T/max" 734003200
: > /tmp/samples
: > /tmp/events
nxq-sample /tmp/samples 100 "inference=$I/current" "training=$T/current" &
pid_sample=$!

say "A process in /inference registers a holder and grows its pool"
start inference /inference 3 4
inference "charge 400M" "granted, holds 400 MiB"
inference "charge 150M" "granted, holds 550 MiB"
echo "   ... 550 MiB charged; 100 MiB more would pass its max of 600 MiB:"
inference "charge 100M" "refused, EDQUOT"
show "$I/current" 576716800
show "$I/max_hits" 1
show "$D/used" 576716800

say "A process in /training grows too, until the device is full"
start training /training 5 6
training "charge 400M" "granted, holds 400 MiB"
echo "   ... 950 MiB used on the device; training is at 400 of its 700 MiB,"
echo "       but 100 MiB more does not fit the device's 1024 MiB:"
training "charge 100M" "refused, ENOSPC"
show "$D/used" 996147200
show "$D/capacity_hits" 1
training "status" "holds 400 MiB; its cgroup: 400 MiB of max 700 MiB; device: 950 MiB used of 1 GiB"

say "The inference process is killed (SIGKILL): the kernel drops its charge"
mark "$(nxq-sample now)" kill inference "kill -9 $pid_inference (SIGKILL)"
run "kill -9 $pid_inference"
wait "$pid_inference" 2>/dev/null
show "$I/current" 0
show "$D/used" 419430400
show "$D/holders" 1
echo "   ... and the memory is there for training now:"
training "charge 300M" "granted, holds 700 MiB"
show "$T/current" 734003200
show "$D/used" 734003200

say "Training stops; everything returns to 0"
echo quit >&5
wait "$pid_training" 2>/dev/null
show "$D/used" 0
say "Lending: /inference is guaranteed 600 MiB (min) but idle; /training borrows"
run "echo '/inference min=600M' > $D/set_budget"
run "echo '/training max=1G' > $D/set_budget"
show "$I/min" 629145600
show "$I/effective_min" 629145600
start_as lend training /training 7 8 --eventfd
lender "charge 900M" "granted, holds 900 MiB"
show "$T/current" 943718400
show "$T/borrowed" 943718400
show "$D/used" 943718400
echo "   ... 600 of training's 900 MiB are inference's unused guarantee, lent."
echo "   training has an eventfd and answers pressure tickets:"
lender "serve" "serving tickets: releasing what is asked"

say "/inference wakes up and grows by 400 MiB (124 MiB are free): it waits"
start_as need inference /inference 9 10 --eventfd
: > /tmp/timeline
tl_ask 9 10 "wait 400M 5000" "waiting up to 5000 ms"
tl_read 10 "granted after"
tl_read 8 "asked 276 MiB (reason DEVICE, level RECALL)"
tl_read 8 "releasing 276 MiB"
tl_read 8 "answered ticket 2: released 276 MiB, holds 624 MiB"
echo "   timeline (the kernel asks training for the 276 MiB missing; training"
echo "   releases them; the kernel grants inference's waiting charge):"
timeline
# the first ticket asked inference for the 26 MiB training lacked above
show "$D/tickets" 2
show "$D/bytes_asked" 316669952
show "$D/bytes_released" 289406976
show "$D/waits" 1
show "$D/timeouts" 0
show "$I/current" 419430400
show "$I/borrowed" 0
show "$T/current" 654311424
show "$T/borrowed" 654311424
show "$D/used" 1073741824

say "The last resort: a borrower that ignores its tickets, with kill_on_ignore"
lender "stop" "stopped serving after 1 ticket(s)"
run "echo 1 > $T/kill_on_ignore"
# No ticket is due sooner than ticket_timeout_ms: below the wait's 1 s,
# the ticket is due at inference's deadline.
run "echo 500 > $D/ticket_timeout_ms"
echo "   ... the device is full; inference grows to its guarantee (200 MiB more)"
echo "   and waits up to 1 s; training is asked and does not answer:"
tl_ask 9 10 "wait 200M 1000" "waiting up to 1000 ms"
t_wait=$us
tl_read 10 "granted after"
wait "$pid_lend"
st=$?
# The kernel kills at inference's deadline, 1000 ms after it began to wait
# (a little after the "waiting" line's time).
mark $((t_wait + 1000000)) kill training "SIGKILL by kill_on_ignore at inference's deadline"
timeline
echo "   [training] exit status $st: killed by signal $((st - 128)) at inference's deadline"
[ "$st" = 137 ] || { echo "UNEXPECTED: expected 137 (SIGKILL)"; rc=1; }
exec 7>&- 8<&-
show "$D/kills" 1
show "$T/kills" 1
show "$T/current" 0
show "$I/current" 629145600
show "$D/used" 629145600
echo quit >&9
wait "$pid_need" 2>/dev/null
show "$D/used" 0

kill "$pid_sample"
wait "$pid_sample"
{
	echo "t_ms,event,group,current_bytes,detail"
	cat /tmp/samples /tmp/events | sort -t, -k1,1n -s | awk -F, '
		NR == 1 { t0 = $1 }
		{ printf "%.3f,%s,%s,%s,%s\n", ($1 - t0) / 1000, $2, $3, $4, $5 }'
} > /tmp/charge.csv
echo
echo "   charge of each group over time: $(grep -c ,sample, /tmp/charge.csv) samples,"
echo "   $(grep -vc -e ,sample, -e ^t_ms /tmp/charge.csv) events (kept as build/demo/charge.csv)"

say "Done"
run "echo $KEY > $S/devices/unregister"
run "rmdir /sys/fs/cgroup/inference /sys/fs/cgroup/training"
run "rmmod nxquota"

echo
if [ $rc = 0 ]; then
	echo "demo: every step behaved as shown"
else
	echo "demo: UNEXPECTED results above"
fi
exit $rc
