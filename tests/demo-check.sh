#!/bin/sh
# tests/demo-check.sh - make demo end to end, and the lending sequence in
# its data.
#
#   tests/demo-check.sh          run tests/vm/run.sh --demo (must pass), then
#                                check build/demo/charge.csv
#   tests/demo-check.sh CSV      check CSV only (an earlier demo's output)
#
# The CSV (t_ms,event,group,current_bytes,detail; rows by time; "sample"
# rows carry a group's sysfs current, the others are events) must show, in
# this order, for the first ticket of the run (its group is the borrower B;
# the group of the last "wait" before it is the guaranteed group G):
#   1. before G arrives (its "wait" event), B's charge is high: above 0 and
#      above G's;
#   2. a "ticket" event for B, at or after G's wait;
#   3. a "release" event for B, after the ticket, and B's charge then
#      drops: its first sample after the release that differs from its
#      charge before G's wait is lower (and comes before the round ends:
#      the next wait or kill event);
#   4. a "grant" event for G after the release, and G's charge then rises:
#      its first changed sample after the release (in the round) is higher
#      than before G's wait;
#   5. a "kill" event for B after the grant (kill_on_ignore), and every
#      "kill" event's group held a charge just before it and is at 0 within
#      2 s after it.
# Exit status 0 when all hold; 1 with the first that does not.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -ge 1 ]; then
	case "$1" in /*) csv=$1 ;; *) csv=$PWD/$1 ;; esac
fi
cd "$top" || exit 1

if [ $# -eq 0 ]; then
	tests/vm/run.sh --demo || { echo "demo-check: make demo failed"; exit 1; }
	csv=build/demo/charge.csv
fi
[ -s "$csv" ] || { echo "demo-check: no $csv"; exit 1; }
head -n 1 "$csv" | grep -q '^t_ms,event,group,current_bytes' ||
	{ echo "demo-check: $csv: unexpected header: $(head -n 1 "$csv")"; exit 1; }

awk -F, '
function fail(m) { print "demo-check: FAIL: " m; bad = 1; exit 1 }
NR == 1 { next }
{
	n++; t[n] = $1 + 0; ev[n] = $2; g[n] = $3; v[n] = $4
	if (n > 1 && t[n] < t[n - 1]) fail("rows out of time order at line " NR)
}
# Value of group x at the last sample at or before time tt (-1: none).
function before(x, tt,   i, r) {
	r = -1
	for (i = 1; i <= n && t[i] <= tt; i++)
		if (ev[i] == "sample" && g[i] == x) r = v[i]
	return r
}
# First sample of x after row k, before row lim, whose value differs from
# ref (-1: none).
function first_change(x, k, ref,   i) {
	for (i = k + 1; i < lim; i++)
		if (ev[i] == "sample" && g[i] == x && v[i] != ref) { ct = t[i]; return v[i] }
	return -1
}
function find(e, x, k,   i) {	# first row > k with event e (group x if set)
	for (i = k + 1; i <= n; i++)
		if (ev[i] == e && (x == "" || g[i] == x)) return i
	return 0
}
END {
	if (bad) exit 1
	T = find("ticket", "", 0);	if (!T) fail("no ticket event")
	B = g[T]
	W = 0
	for (i = 1; i < T; i++) if (ev[i] == "wait") W = i
	if (!W) fail("no wait event before the ticket")
	G = g[W]
	if (G == B) fail("the waiter " G " is the ticket holder")
	bb = before(B, t[W]); gb = before(G, t[W])
	if (bb <= 0) fail("borrower " B " holds " bb " before " G " arrives (t=" t[W] ")")
	if (bb <= gb) fail("borrower " B " (" bb ") not above " G " (" gb ") before it arrives")
	printf "demo-check: 1. %s holds %d MiB (%s %d MiB) before %s waits at %.1f ms\n", B, bb / 1048576, G, gb / 1048576, G, t[W]
	printf "demo-check: 2. ticket for %s at %.1f ms\n", B, t[T]
	# This round ends at the next wait or kill event.
	lim = n + 1
	for (i = T + 1; i <= n; i++) if (ev[i] == "wait" || ev[i] == "kill") { lim = i; break }
	R = find("release", B, T);	if (!R) fail("no release by " B " after its ticket")
	nb = first_change(B, R, bb)
	if (nb < 0 || nb >= bb) fail(B "\047s charge does not drop after its release (" bb " -> " nb ")")
	printf "demo-check: 3. %s releases at %.1f ms: %d -> %d MiB (sample at %.1f ms)\n", B, t[R], bb / 1048576, nb / 1048576, ct
	Gr = find("grant", G, W);	if (!Gr) fail("no grant for " G)
	if (t[Gr] < t[R] || Gr < R) fail("grant of " G " (" t[Gr] " ms) before the release (" t[R] " ms)")
	ng = first_change(G, R, gb)
	if (ng < 0 || ng <= gb) fail(G "\047s charge does not rise after the release (" gb " -> " ng ")")
	printf "demo-check: 4. %s granted at %.1f ms: %d -> %d MiB (sample at %.1f ms)\n", G, t[Gr], gb / 1048576, ng / 1048576, ct
	K = find("kill", B, Gr);	if (!K) fail("no kill event for " B " after the grant")
	nk = 0
	for (k = 1; k <= n; k++) {
		if (ev[k] != "kill") continue
		nk++
		x = g[k]; h = before(x, t[k])
		if (h <= 0) fail("kill of " x " at " t[k] " ms: it held " h " just before")
		z = 0
		for (i = k + 1; i <= n && t[i] <= t[k] + 2000; i++)
			if (ev[i] == "sample" && g[i] == x && v[i] == 0) { z = i; break }
		if (!z) fail("kill of " x " at " t[k] " ms: its charge not 0 within 2 s")
		printf "demo-check: 5. kill of %s at %.1f ms: %d MiB -> 0 (sample at %.1f ms)\n", x, t[k], h / 1048576, t[z]
	}
	print "demo-check: ok: the lending sequence is in order (" nk " kills)"
}' "$csv"
