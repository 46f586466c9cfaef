#!/bin/bash
# Issue 12: the allocator's GPU figures on one H200.  bench/RESULTS.rst's
# older steps/s come from TORCH_MODE=procs RUNS=5 WINDOWS=5 STEPS=30
# CONFIGS=native,native-expandable,tensor-async,tensor-sync (about 6
# minutes for bench_torch.py alone).
#
#   OUT=/some/dir bash bench/gpu-s4-alloc.sh      (cwd: an unpacked git archive of HEAD)
#
# Runs, each with its own timeout and log under $OUT:
#   1. python3 integrations/pytorch/bench/bench_torch.py --lockstep $ROUNDS (30)
#        --procs $PROCS (2) --pin $PIN (2-9 where there are 10 CPUs or more)
#        --steps $STEPS (20) --models small,decoder
#        --configs $CONFIGS (native-expandable,tensor-sync,tensor-async)
#        --profile: every process alive at once, one window each in turn
#      (steps/s against native-expandable's in the same round, NVML
#      per-process peak, loss digests; a torch.profiler table per process
#      and workload in prof.tgz; torch.log, torch.json).  These are the
#      settings that read 1.02-1.05x on the H200 (bench/RESULTS.rst, "In
#      lockstep"); one unpinned process per configuration reads the same
#      medians with a process's own luck in them.  With TORCH_MODE=procs, a
#      process per run and configuration in turn (--runs $RUNS (3)
#      --windows $WINDOWS (3)) as before
#   2. make -s -C lib check-gpu                  (check-gpu.log)
#   3. make -s -C lib bench-gpu                  (bench-gpu.log: warm pairs,
#      growth per GiB against one cudaMalloc / one big handle)
#   4. python3 integrations/pytorch/tests/run_gpu_tests.py   (gpu-tests.log)
# and prints PASS/FAIL lines with the figures; "SUMMARY" at the end.
# Without a GPU (check-gpu's gpu_test says "skipped: no GPU"): says
# "skipped" and why, and exits 0 after the build.
#
# Each timeout is what the part took on the H200 per process it starts,
# times about 2, times the processes it will start (TORCH_S and
# GPUTESTS_S override them):
#   bench_torch.py --lockstep: 60 s for the start, and 60 s per process
#     (six processes, 30 rounds of three workloads took 266 s on the
#     H200): 420 s with the defaults;
#   bench_torch.py, TORCH_MODE=procs: one process per run and
#     configuration, and one warm-up; 7 processes took up to 180 s (25 s
#     each) -> 45 s each: 585 s with the defaults (13);
#   run_gpu_tests.py: one worker process per run() in it (10 today);
#     they took 106 s -> 30 s each: 300 s;
#   check-gpu and bench-gpu keep 45 s and 75 s: no H200 timing of theirs
#     is recorded to size them from.
set -u
OUT=${OUT:-/tmp/nxq-s4-out}
mkdir -p "$OUT"
t0=$(date +%s)
main() {
el() { echo "[+$(( $(date +%s) - t0 ))s] $*"; }
verdict() { # name rc
	if [ "$2" -eq 0 ]; then echo "PASS $1"; else echo "FAIL $1 (rc $2)"; fi
}

el "build: lib, then the PyTorch integration and the torch peer in parallel"
make -s -j16 -C lib all > "$OUT/build.log" 2>&1
verdict "build lib" $?
( make -s -C integrations/pytorch all > "$OUT/build-torch.log" 2>&1; echo "rc=$?" >> "$OUT/build-torch.log" ) &
tb=$!
( bench/build-torch-peer.sh bench/torch_peer.cpp bench/torch_peer > "$OUT/build-peer.log" 2>&1 ) &
pb=$!

el "check-gpu"
timeout 45 make -s -C lib check-gpu > "$OUT/check-gpu.log" 2>&1
rc=$?; tail -4 "$OUT/check-gpu.log"
wait $tb; wait $pb
if grep -q "^skipped: no GPU" "$OUT/check-gpu.log"; then
	echo "gpu-s4-alloc: skipped: $(grep -m1 '^skipped: no GPU' "$OUT/check-gpu.log" | cut -c10-)"
	return 0
fi
verdict "check-gpu" $rc
grep -q "rc=0" "$OUT/build-torch.log"; verdict "build integrations/pytorch" $?

nconf=$(echo "${CONFIGS:-x,y,z}" | tr ',' '\n' | grep -c .)
if [ "${TORCH_MODE:-lockstep}" = lockstep ]; then
	# every process alive at once, one window each in turn for ROUNDS
	# rounds (bench/lockstep.py); a profiled window each at the end
	CONFIGS=${CONFIGS:-native-expandable,tensor-sync,tensor-async}
	[ "$(nproc)" -ge 10 ] && PIN=${PIN-2-9}
	TORCH_S=${TORCH_S:-$(( 60 + nconf * ${PROCS:-2} * 60 ))}
	el "bench_torch.py --lockstep ${ROUNDS:-30} --procs ${PROCS:-2} ${PIN:+--pin $PIN} ($CONFIGS; small, decoder; timeout $TORCH_S s)"
	timeout "$TORCH_S" python3 integrations/pytorch/bench/bench_torch.py --lockstep ${ROUNDS:-30} \
		--procs ${PROCS:-2} --steps ${STEPS:-20} --models small,decoder --configs "$CONFIGS" ${PIN:+--pin "$PIN"} \
		--profile "$OUT/prof" --out "$OUT/torch.json" > "$OUT/torch.log" 2>&1
	rc=$?
	tar -czf "$OUT/prof.tgz" -C "$OUT" prof 2>/dev/null && rm -rf "$OUT/prof"
	grep -E "^\| |^lockstep |^  [a-z-]+: " "$OUT/torch.log"
else
	CONFIGS=${CONFIGS:-native,native-expandable,tensor-sync,tensor-async}
	nconf=$(echo "$CONFIGS" | tr ',' '\n' | grep -c .)
	TORCH_S=${TORCH_S:-$(( (${RUNS:-3} * nconf + 1) * 45 ))}
	el "bench_torch.py ($CONFIGS; small, decoder; timeout $TORCH_S s)"
	timeout "$TORCH_S" python3 integrations/pytorch/bench/bench_torch.py --runs ${RUNS:-3} \
		--windows ${WINDOWS:-3} --steps ${STEPS:-20} --models small,decoder --configs "$CONFIGS" \
		--out "$OUT/torch.json" > "$OUT/torch.log" 2>&1
	rc=$?
	grep -E "^\| |^workload|^torch " "$OUT/torch.log"
fi
verdict "bench_torch ran" $rc
grep -q "^targets" "$OUT/torch.log" || echo "FAIL torch: no targets table (skipped or failed: see torch.log)"
# lockstep: steps/s >= 1.00x native-expandable, peak <= native-expandable,
# losses equal to native's (procs: steps/s against native)
grep -E "^  (small|decoder) " "$OUT/torch.log" | while read -r m c _ s _ p _ l _; do
	for x in "steps/s:$s" "peak:$p" "losses:$l"; do
		[ "${x#*:}" = met ] && echo "PASS torch $m $c ${x%%:*}" || echo "FAIL torch $m $c ${x%%:*}"
	done
done

el "bench-gpu"
timeout 75 make -s -C lib bench-gpu > "$OUT/bench-gpu.log" 2>&1
rc=$?
grep -E "ns |ms |x |PASS|FAIL|handles per GiB" "$OUT/bench-gpu.log" | head -40
verdict "bench-gpu ran" $rc

workers=$(grep -c '= run(tmp, ' integrations/pytorch/tests/run_gpu_tests.py)
[ "$workers" -gt 0 ] || workers=10
GPUTESTS_S=${GPUTESTS_S:-$((workers * 30))}
el "run_gpu_tests.py ($workers worker processes; timeout $GPUTESTS_S s)"
timeout "$GPUTESTS_S" python3 integrations/pytorch/tests/run_gpu_tests.py > "$OUT/gpu-tests.log" 2>&1
rc=$?; tail -8 "$OUT/gpu-tests.log"; verdict "run_gpu_tests.py" $rc

el "done"
}

main 2>&1 | tee "$OUT/run.log"
echo "SUMMARY: $(grep -c '^PASS' "$OUT/run.log") PASS, $(grep -c '^FAIL' "$OUT/run.log") FAIL; logs in $OUT"
grep '^FAIL' "$OUT/run.log"
exit 0
