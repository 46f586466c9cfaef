# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Steps/s and peak device memory: PyTorch's caching allocator against
libnxquota (stream-ordered frees, and synchronous frees), same model, seed
and data, side by side (make -C integrations/pytorch bench).

    python3 bench/bench_torch.py [--runs 3] [--models small,tiny] [--out FILE]

Each run is one process per allocator (an allocator is fixed before CUDA
starts), in turn: native, nxq-async, nxq-sync, native, ...  Inside a process:
--warmup steps, then --windows timed windows of --steps steps (a window ends
with torch.cuda.synchronize(); no per-step sync, so the CPU runs ahead as in
real training).  Reported: the median over runs of each run's median window
(steps/s); peak memory: the caching allocator's max_memory_reserved (and
max_memory_allocated), the arena's peak mapped bytes (and peak charge, which
adds retained handles; peak live bytes rounded to 256); and, for both, the
device's used memory (cuMemGetInfo) at the end of the model's run minus
before its first allocation -- the nvidia-smi view, which includes cuBLAS
handles and workspaces created meanwhile.  Prints "skipped: ..." without
PyTorch or a GPU.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
WORKER = os.path.join(TOP, "tests", "torch_worker.py")
MiB = 1 << 20

MODES = {
    "native": ("native", {}),
    "nxq-async": ("nxq", {"NXQ_TORCH_FREE": "async"}),
    "nxq-sync": ("nxq", {"NXQ_TORCH_FREE": "sync"}),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--models", default="small,tiny")
    ap.add_argument("--modes", default="native,nxq-async,nxq-sync")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--windows", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--out")
    a = ap.parse_args()
    try:
        import torch
        if not torch.cuda.is_available():
            print("skipped: no GPU (torch.cuda.is_available() is False)")
            return 0
    except Exception as e:
        print("skipped: no PyTorch (%s)" % e)
        return 0
    if not os.path.exists(os.path.join(TOP, "build", "libnxq_torch.so")):
        print("skipped: build/libnxq_torch.so is not built")
        return 0
    tmp = tempfile.mkdtemp(prefix="nxq_bench_")
    modes = a.modes.split(",")
    res = {m: [] for m in modes}
    for run in range(a.runs):
        for m in modes:
            alloc, extra = MODES[m]
            out = os.path.join(tmp, "%s_%d.json" % (m, run))
            env = dict(os.environ, **extra)
            cmd = [sys.executable, WORKER, "bench", "--alloc", alloc, "--out", out,
                   "--models", a.models, "--warmup", str(a.warmup), "--windows",
                   str(a.windows), "--steps", str(a.steps)]
            p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=600)
            rep = json.load(open(out)) if os.path.exists(out) else None
            if p.returncode != 0 or not rep or not rep.get("ok"):
                print("%s run %d failed (rc %d):\n%s\n%s" % (
                    m, run, p.returncode, p.stdout.decode(errors="replace")[-2000:],
                    (rep or {}).get("error", "")))
                return 1
            res[m].append(rep)
    print("torch %s; %d runs per allocator, each the median of %d windows of %d steps "
          "after %d warm-up steps" % (res[modes[0]][0]["torch"], a.runs, a.windows,
                                      a.steps, a.warmup))
    summary = {}
    for model in a.models.split(","):
        print("\nmodel %s (tests/torch_worker.py MODELS)" % model)
        print("| allocator | steps/s (median) | min..max of runs | peak pool MiB | "
              "peak live MiB | device used delta MiB | final loss |")
        print("|---|---|---|---|---|---|---|")
        for m in modes:
            rs = [r["models"][model] for r in res[m]]
            per_run = [statistics.median(r["steps_per_s"]) for r in rs]
            if m == "native":
                pool = [r["peak_reserved"] for r in rs]
                live = [r["peak_allocated"] for r in rs]
                pool_what, live_what = "max_memory_reserved", "max_memory_allocated"
            else:
                pool = [r["peak_mapped"] for r in rs]
                live = [r["peak_rounded"] for r in rs]
                pool_what, live_what = "arena peak mapped", "peak live (256-rounded)"
            used = [r["used_delta_end"] for r in rs]
            row = {"steps_per_s": statistics.median(per_run), "runs": per_run,
                   "peak_pool": statistics.median(pool), "pool_is": pool_what,
                   "peak_live": statistics.median(live), "live_is": live_what,
                   "used_delta": statistics.median(used),
                   "final_loss": rs[0]["final_loss"]}
            if m != "native":
                row["peak_charged"] = statistics.median(r["peak_charged"] for r in rs)
                row["grows"] = statistics.median(r["grows"] for r in rs)
            summary.setdefault(model, {})[m] = row
            print("| %s | %.1f | %.1f..%.1f | %.0f (%s) | %.0f (%s) | %.0f | %.5f |" % (
                m, row["steps_per_s"], min(per_run), max(per_run), row["peak_pool"] / MiB,
                pool_what, row["peak_live"] / MiB, live_what, row["used_delta"] / MiB,
                row["final_loss"]))
        base = summary[model].get("native")
        if base:
            for m in modes:
                if m != "native":
                    r = summary[model][m]
                    print("%s: %.3fx native steps/s, peak pool %.2fx native" % (
                        m, r["steps_per_s"] / base["steps_per_s"],
                        r["peak_pool"] / max(1, base["peak_pool"])))
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"summary": summary, "raw": res}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
