# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Steps/s, peak device memory and losses: PyTorch's caching allocator
(plain, and with expandable segments) against libnxquota's two routes
(the per-tensor pluggable allocator with synchronous and stream-ordered
frees, and torch.cuda.MemPool with the caching allocator in front), same
models, seeds and data, side by side (make -C integrations/pytorch bench).

    python3 bench/bench_torch.py [--runs 3] [--models small,decoder] [--out FILE]

Workloads (tests/torch_worker.py): "small" and "tiny" are the project's
fixed-shape models (MODELS: a TransformerEncoder trained on one shape);
"decoder" is a GPT-like decoder (DECODERS) whose batch and sequence length
are drawn at random every step from a seeded generator.

Each run is one process per configuration (an allocator is fixed before
CUDA starts; PYTORCH_CUDA_ALLOC_CONF is read then too), in turn, for
--runs runs.  Inside a process, per workload: --warmup steps, then
--windows timed windows of --steps steps (no per-step synchronisation, so
the CPU runs ahead as in real training).  Reported:
  steps/s      the median over runs of each run's median window;
  x native     the median over runs of (steps/s / native's steps/s in the
               same run): runs visit the configurations in turn, each run
               starting one further on and every other one backwards; the
               target is read from it;
  peak MiB     the device's used memory (cudaMemGetInfo) read after every
               step, highest value minus the value read when the process's
               CUDA context was up and nothing was allocated yet: the same
               measure for every configuration (it counts what each
               allocator holds from the driver, the warm-up's reservations
               included; every one of them keeps what it got until asked);
               the x native-expandable target is taken from it;
  after warm-up MiB  the same highest value minus the value read before
               the model was built, after CUDA, cuBLAS and the allocator
               were warmed up (the measure used before 2026-12-01: it
               leaves out what each allocator reserved for the warm-up,
               20 MiB pages for expandable segments, smaller handles for
               the arena, so it moves with that choice);
  alloc MiB    the allocator's own peak, for information: the caching
               allocator's max_memory_reserved (native and pool), the
               arena's peak charge (tensor route);
  losses       whether every step's loss is bitwise equal to the native
               run's (deterministic algorithms, TF32 off).
With --lockstep N, every configuration's process (--procs of each) is
started once and they take turns, one window each, for N rounds
(bench/lockstep.py): a round's ratio compares windows seconds apart, of
the same steps.  Printed per workload: each configuration's median
window rate, and the median over rounds of its rate over native's and
over native-expandable's in the same round, with quartiles; each
process's NVML-listed device memory at the end (its peak) less its
context, the allocator's own peak, and a digest of its losses (all equal
to native's when the routes compute the same thing).  --pin CPUS runs
every process on the same CPUs; --profile DIR writes one
torch.profiler table per process and workload.  --models may add
"pairs": 20,000 tensors made and dropped per window, no model (each
route's cost per allocation, apart from the steps).

Prints "skipped: ..." without PyTorch or a GPU.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
WORKER = os.path.join(TOP, "tests", "torch_worker.py")
MiB = 1 << 20

# name: (--alloc, environment)
CONFIGS = {
    "native": ("native", {}),
    "native-expandable": ("native", {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
    "tensor-sync": ("nxq", {"NXQ_TORCH_ROUTE": "tensor", "NXQ_TORCH_FREE": "sync"}),
    "tensor-async": ("nxq", {"NXQ_TORCH_ROUTE": "tensor", "NXQ_TORCH_FREE": "async"}),
    "pool": ("nxq", {"NXQ_TORCH_ROUTE": "pool"}),
    # Not in the default set: the tensor route with other physical handle
    # sizes (grow_batch; the integration's default is 4M), which bound how
    # far one growth can overshoot its need.
    "tensor-async-gb64": ("nxq", {"NXQ_TORCH_ROUTE": "tensor", "NXQ_TORCH_FREE": "async",
                                  "NXQ_TORCH_GROW_BATCH": "64M"}),
    "tensor-async-gb16": ("nxq", {"NXQ_TORCH_ROUTE": "tensor", "NXQ_TORCH_FREE": "async",
                                  "NXQ_TORCH_GROW_BATCH": "16M"}),
}
DEFAULT_CONFIGS = ["native", "native-expandable", "tensor-sync", "tensor-async", "pool"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--models", default="small,decoder")
    ap.add_argument("--configs", default=",".join(DEFAULT_CONFIGS))
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--windows", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--out")
    ap.add_argument("--lockstep", type=int, metavar="ROUNDS",
                    help="every configuration's process alive at once, a window each in turn")
    ap.add_argument("--procs", type=int, default=1, help="--lockstep: processes per configuration")
    ap.add_argument("--pin", metavar="CPUS", help="taskset -c CPUS for every process")
    ap.add_argument("--profile", metavar="DIR", help="--lockstep: a profiled window per process")
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
    if a.profile:
        os.makedirs(a.profile, exist_ok=True)
    if a.lockstep:
        return lockstep_main(a, tmp)
    configs = a.configs.split(",")
    models = a.models.split(",")
    res = {c: [] for c in configs}
    # One process first, not counted: the first CUDA process on a machine
    # pays for clocks and caches coming up.
    subprocess.run([sys.executable, WORKER, "bench", "--alloc", "native", "--out",
                    os.path.join(tmp, "discard.json"), "--models", a.models, "--warmup", "2",
                    "--windows", "1", "--steps", "5"], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=600)
    for run in range(a.runs):
        # Each run starts one configuration further on, and every other run
        # goes backwards, so that no configuration always follows the same
        # one (the machine drifts, and a process may pay for the one before).
        order = configs[run % len(configs):] + configs[:run % len(configs)]
        for c in (order if run % 2 == 0 else order[::-1]):
            alloc, extra = CONFIGS[c]
            out = os.path.join(tmp, "%s_%d.json" % (c, run))
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith("NXQ_TORCH_") and k != "PYTORCH_CUDA_ALLOC_CONF"}
            env.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
            env.update(extra)
            cmd = [sys.executable, WORKER, "bench", "--alloc", alloc, "--out", out,
                   "--models", a.models, "--warmup", str(a.warmup), "--windows",
                   str(a.windows), "--steps", str(a.steps)]
            p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=600)
            rep = json.load(open(out)) if os.path.exists(out) else None
            if p.returncode != 0 or not rep or not rep.get("ok"):
                print("%s run %d failed (rc %d):\n%s\n%s" % (
                    c, run, p.returncode, p.stdout.decode(errors="replace")[-2000:],
                    (rep or {}).get("error", "")))
                return 1
            res[c].append(rep)
            print("# run %d %-18s %s" % (run, c, "  ".join(
                "%s %.1f steps/s" % (m, statistics.median(rep["workloads"][m]["steps_per_s"]))
                for m in models)))
            sys.stdout.flush()
    first = res[configs[0]][0]
    print("\ntorch %s; %d runs per configuration, each the median of %d windows of %d steps "
          "after %d warm-up steps" % (first["torch"], a.runs, a.windows, a.steps, a.warmup))
    summary = {}
    for m in models:
        print("\nworkload %s" % m)
        print("| configuration | steps/s | runs | x native (paired) | peak MiB | x native-expandable "
              "| after warm-up MiB | x | alloc MiB | losses = native |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        rows = {}
        for c in configs:
            ws = [r["workloads"][m] for r in res[c]]
            per_run = [statistics.median(w["steps_per_s"]) for w in ws]
            alloc_peak = [w.get("peak_reserved", w.get("peak_charged", 0)) for w in ws]
            rows[c] = {"steps_per_s": statistics.median(per_run), "runs": per_run,
                       "peak_used": statistics.median(w["peak_used"] for w in ws),
                       "peak_total": statistics.median(w.get("peak_total", w["peak_used"])
                                                       for w in ws),
                       "alloc_peak": statistics.median(alloc_peak),
                       "alloc_is": "max_memory_reserved" if "peak_reserved" in ws[0]
                       else "arena peak charge",
                       "losses": ws[0]["losses"],
                       "same_each_run": all(w["losses"] == ws[0]["losses"] for w in ws)}
        nat = rows.get("native")
        exp = rows.get("native-expandable")
        for c in configs:
            r = rows[c]
            # The target: the median over runs of this run's steps/s over the
            # native process's in the same run (side by side), not a ratio of
            # medians taken from different minutes.
            r["x_native"] = (statistics.median(x / n for x, n in zip(r["runs"], nat["runs"]))
                             if nat else None)
            r["x_native_of_medians"] = (r["steps_per_s"] / nat["steps_per_s"]
                                        if nat else None)
            r["x_expandable_peak"] = r["peak_total"] / exp["peak_total"] if exp else None
            r["x_expandable_after_warmup"] = (r["peak_used"] / exp["peak_used"]
                                              if exp else None)
            r["bitwise"] = bool(nat) and r["losses"] == nat["losses"] and r["same_each_run"]
            print("| %s | %.1f | %s | %s | %.0f | %s | %.0f | %s | %.0f (%s) | %s |" % (
                c, r["steps_per_s"], "..".join("%.1f" % v for v in (min(r["runs"]),
                                                                    max(r["runs"]))),
                "%.3f" % r["x_native"] if nat else "-", r["peak_total"] / MiB,
                "%.3f" % r["x_expandable_peak"] if exp else "-", r["peak_used"] / MiB,
                "%.3f" % r["x_expandable_after_warmup"] if exp else "-",
                r["alloc_peak"] / MiB,
                r["alloc_is"], "-" if not nat else "yes" if r["bitwise"] else "NO"))
        summary[m] = {c: {k: v for k, v in r.items() if k != "losses"} for c, r in rows.items()}
        summary[m]["steps"] = len(nat["losses"]) if nat else None
    print("\ntargets: steps/s >= 1.00x native, peak <= native-expandable, losses bitwise "
          "equal")
    for m in models:
        for c in configs:
            if c.startswith("native"):
                continue
            r = summary[m][c]
            nat_ran = "native" in summary[m]
            exp_ran = "native-expandable" in summary[m]
            print("  %-8s %-13s steps/s %s  peak %s  losses %s" % (
                m, c, "n/a (no native run)" if not nat_ran else
                "met" if r["x_native"] >= 1.0 else "MISSED",
                "n/a (no native-expandable run)" if not exp_ran else
                "met" if r["x_expandable_peak"] <= 1.0 else "MISSED",
                "n/a (no native run)" if not nat_ran else
                "met" if r["bitwise"] else "MISSED"))
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"summary": summary, "raw": res}, f, indent=1)
    return 0


def lockstep_main(a, tmp):
    sys.path.insert(0, os.path.join(TOP, "..", "..", "bench"))
    import lockstep
    configs = a.configs.split(",")
    workers = []
    for c in configs:
        alloc, extra = CONFIGS[c]
        env = ["env", "-u", "PYTORCH_CUDA_ALLOC_CONF"]
        for k in os.environ:
            if k.startswith("NXQ_TORCH_"):
                env += ["-u", k]
        env += ["CUBLAS_WORKSPACE_CONFIG=:4096:8"] + ["%s=%s" % kv for kv in extra.items()]
        for i in range(a.procs):
            name = c if a.procs == 1 else "%s#%d" % (c, i + 1)
            cmd = env + (["taskset", "-c", a.pin] if a.pin else []) + [
                sys.executable, WORKER, "serve", "--alloc", alloc,
                "--out", os.path.join(tmp, "%s.json" % name.replace("#", "_")),
                "--models", a.models, "--warmup", str(a.warmup),
                "--windows", str(a.lockstep + 1), "--steps", str(a.steps)]
            workers.append((name, " ".join(shlex.quote(x) for x in cmd)))
    bases = [b for b in ("native", "native-expandable") if b in configs] or [configs[0]]
    log = open(os.path.join(tmp, "lockstep.log"), "w")
    print("lockstep: %d processes, %d rounds of one %d-step window each, after %d warm-up "
          "steps; log %s" % (len(workers), a.lockstep, a.steps, a.warmup, log.name))
    sys.stdout.flush()
    try:
        res = lockstep.run(workers, a.lockstep, bases, log, a.profile)
    except Exception as e:
        log.flush()
        print("lockstep failed: %s\n%s" % (e, open(log.name).read()[-3000:]))
        return 1
    lockstep.report(res)
    # targets: steps/s >= 1.00x native-expandable's (or native's when it did
    # not run) as the median over rounds; peak <= native-expandable's, from
    # NVML's per-process figure, else the allocator's own; losses = native's
    ref = "native-expandable" if "native-expandable" in configs else "native"
    print("\ntargets (lockstep): steps/s >= 1.00x %s in the same round, peak <= "
          "native-expandable, losses equal to %s's" % (
              ref, "native" if "native" in configs else "native-expandable"))

    def peak(infos, c):
        v = [i.get("nvml_peak_MiB") for n, i in infos.items() if n.split("#")[0] == c]
        if v and all(x not in (None, "-") for x in v):
            return statistics.median(int(x) for x in v), "nvml"
        v = [i.get("reserved_peak_MiB", i.get("arena_peak_MiB")) for n, i in infos.items()
             if n.split("#")[0] == c]
        return (statistics.median(int(x) for x in v), "allocator") if v and None not in v \
            else (None, None)

    for wl, r in res.items():
        if wl == "pairs":           # the route's own cost: a figure, no target
            continue
        digests = {n: i.get("losses") for n, i in r["infos"].items()}
        # native's losses; without a native process, expandable segments'
        # (the same caching allocator: its losses were native's in every run)
        nat = ([d for n, d in digests.items() if n.split("#")[0] == "native"] or
               [d for n, d in digests.items() if n.split("#")[0] == "native-expandable"])
        for c in configs:
            if c.startswith("native"):
                continue
            x = r["configs"][c]["x"][ref]["median"]
            pc, how = peak(r["infos"], c)
            pe, how_e = peak(r["infos"], "native-expandable")
            mine = [d for n, d in digests.items() if n.split("#")[0] == c]
            print("  %-8s %-13s steps/s %s  peak %s  losses %s   (x %s %.4f; peak %s %s "
                  "MiB against %s)" % (
                      wl, c, "met" if x >= 1.0 else "MISSED",
                      "n/a" if pe is None or pc is None or how != how_e else
                      "met" if pc <= pe else "MISSED",
                      "n/a" if not nat else "met" if all(d == nat[0] for d in mine) else "MISSED",
                      ref, x, how, pc, pe))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
