#!/bin/bash
# tests/vm/selftest/run.sh - the scenario harness's own tests (harness.h):
# a process and a time limit per test, variants, the program's verdict.
#
#   tests/vm/selftest/run.sh
#
# Builds each st_*.c here (for the host, into build/harness-selftest/),
# runs it and checks its exit status and lines against what harness.h
# promises: what init.sh and tests/daemon-scen.sh read (exit 0/1/77, the
# first "FAIL: "/"SKIP: " line), the "ok"/"not ok" lines, and that no
# process of a test outlives it.  No root, no module, a few seconds.
# Output: one line per check, then "harness-selftest: N passed, M failed";
# exit 1 if a check failed.  NXQ_HARNESS_DIR: where harness.h is (default
# tests/vm), for a mutant of it.
set -u
top=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$top" || exit 2
out=build/harness-selftest
rm -rf "$out"
mkdir -p "$out"
npass=0 nfail=0

check() {	# what command...: the command must succeed
	local what=$1
	shift
	if "$@"; then
		npass=$((npass + 1))
		echo "harness-selftest: ok   $what"
	else
		nfail=$((nfail + 1))
		echo "harness-selftest: FAIL $what"
	fi
}
has() { grep -qF -- "$2" "$out/$1.out"; }	# prog text
hasnt() { ! has "$@"; }
first() {	# prog text: the first FAIL/SKIP line is text
	[ "$(grep -m1 -E '^(FAIL|SKIP): ' "$out/$1.out")" = "$2" ]
}
status() { [ "$(cat "$out/$1.rc")" = "$2" ]; }
dead() { ! kill -0 "$1" 2>/dev/null; }
run() {	# name prog [env...]: run build/.../prog, keep its output and status
	local name=$1 prog=$2
	shift 2
	local t0=$(date +%s%N)
	env "$@" timeout -s KILL 60 "$out/$prog" > "$out/$name.out" 2>&1
	echo $? > "$out/$name.rc"
	echo $(( ($(date +%s%N) - t0) / 1000000 )) > "$out/$name.ms"
	sed "s/^/    [$name] /" "$out/$name.out"
}

for f in tests/vm/selftest/st_*.c; do
	p=$(basename "$f" .c)
	if ! gcc -O2 -Wall -Werror -I"${NXQ_HARNESS_DIR:-tests/vm}" -o "$out/$p" "$f" > "$out/$p.log" 2>&1; then
		cat "$out/$p.log"
		check "$p builds" false
	fi
done

# ---- a time limit per test ---------------------------------------------
run timeout st_timeout ST_PIDS="$top/$out/timeout.pids"
check "timeout: exit 1" status timeout 1
check "timeout: the first FAIL line names the test and its limit" \
	first timeout "FAIL: hangs: timed out after 1 s (its process group killed)"
check "timeout: not ok 1 hangs" has timeout "not ok 1 hangs"
check "timeout: a 3 s test passes under the default limit" has timeout "ok 2 sleeps"
check "timeout: the test after it runs" has timeout "ok 3 after"
check "timeout: well within 10 s" test "$(cat $out/timeout.ms)" -lt 10000
read -r p1 p2 < "$out/timeout.pids" 2>/dev/null
check "timeout: its th_fork() child is gone" dead "${p1:-1}"
check "timeout: its plain fork() child is gone (the process group)" dead "${p2:-1}"
run timeout-env st_timeout ST_PIDS="$top/$out/timeout-env.pids" NXQ_TEST_TIMEOUT=1
check "NXQ_TEST_TIMEOUT=1: the 3 s test times out" \
	has timeout-env "FAIL: sleeps: timed out after 1 s"
check "NXQ_TEST_TIMEOUT=1: a test's own limit stays" \
	has timeout-env "FAIL: hangs: timed out after 1 s"
read -r p1 p2 < "$out/timeout-env.pids" 2>/dev/null
[ -n "${p2:-}" ] && kill -KILL "$p1" "$p2" 2>/dev/null

# ---- a process per test -------------------------------------------------
run isolation st_isolation ST_MARK="$top/$out/isolation.mark"
check "isolation: exit 1" status isolation 1
check "isolation: a test's global and environment stay in its process" \
	has isolation "ok 2 sees_none"
check "isolation: the first FAIL line is the crash's" \
	first isolation "FAIL: crashes: killed by signal 11 (Segmentation fault)"
check "isolation: not ok 3 crashes" has isolation "not ok 3 crashes"
check "isolation: an ASSERT fails its test" has isolation "not ok 4 fx.fails"
check "isolation: the fixture's teardown ran after it" \
	grep -q '^teardown ' "$out/isolation.mark"
check "isolation: a process left behind fails the test" \
	has isolation "FAIL: leaves_process: left processes behind (killed): "
check "isolation: not ok 5 leaves_process" has isolation "not ok 5 leaves_process"
check "isolation: the last test runs" has isolation "ok 6 last"
check "isolation: no PASS line" hasnt isolation "PASS:"
lp=$(grep -o 'left processes behind (killed): [0-9]*' "$out/isolation.out" | grep -o '[0-9]*$')
check "isolation: the process left behind is gone" dead "${lp:-1}"

# ---- variants ------------------------------------------------------------
run variants st_variants
check "variants: exit 0" status variants 0
check "variants: PASS" has variants "PASS: st_variants"
check "variants: fx.one.sees_its_variant" has variants "ok 1 fx.one.sees_its_variant"
check "variants: its fields" has variants "variant one n=1"
check "variants: fx.two.sees_its_variant" has variants "ok 2 fx.two.sees_its_variant"
check "variants: its fields" has variants "variant two n=2"
check "variants: one ruled out is reported, not run" \
	has variants "ok 3 fx.other.sees_its_variant # SKIP not this run's"
check "variants: every test per variant" has variants "ok 6 fx.other.second # SKIP"
check "variants: no SKIP: line when others ran" hasnt variants "SKIP: "
run variants-none st_variants ST_RULE_OUT=all
check "variants, none for this run: exit 77" status variants-none 77
check "variants, none for this run: the SKIP line says why" \
	first variants-none "SKIP: not this run's"
check "variants, none for this run: no PASS line" hasnt variants-none "PASS:"

# ---- skips --------------------------------------------------------------
run skip st_skip
check "skip: exit 77" status skip 77
check "skip: the SKIP line is the reason" first skip "SKIP: no widget here"
check "skip: the tests after it are not run" \
	has skip "ok 3 not_run # SKIP not run: skips skipped"
check "skip: nothing after it ran" hasnt skip "ran after a skip"
run skip-fail st_skip ST_FAIL_FIRST=1
check "skip after a failure: exit 1" status skip-fail 1
check "skip after a failure: the FAIL line first" \
	first skip-fail "FAIL: tests/vm/selftest/st_skip.c:$(grep -n 'failed on purpose' tests/vm/selftest/st_skip.c | cut -d: -f1): failed on purpose"

echo "harness-selftest: $npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
