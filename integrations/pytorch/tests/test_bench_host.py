# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""bench/bench_torch.py without a GPU: its table and targets from the
per-process reports the H200 wrote at b5060ea (tests/data/, 3 runs of
five configurations), served by a stand-in worker and a stand-in torch
module in a scratch tree.  Checks the paired ratios (the median over runs
of each run's ratio to native's process in the same run), the peaks
against expandable segments, the target lines, and that a set without
native or native-expandable says n/a instead of met or MISSED.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
DATA = os.path.join(HERE, "data", "bench-h200-b5060ea.json")

WORKER = r'''
import json, os, sys
a = sys.argv
out = a[a.index("--out") + 1]
if out.endswith("discard.json"):
    sys.exit(0)
raw = json.load(open(os.environ["BENCH_FIXTURE"]))
if a[a.index("--alloc") + 1] == "native":
    c = "native-expandable" if os.environ.get("PYTORCH_CUDA_ALLOC_CONF") else "native"
elif os.environ.get("NXQ_TORCH_ROUTE") == "pool":
    c = "pool"
else:
    c = "tensor-" + os.environ["NXQ_TORCH_FREE"]
run = int(os.path.basename(out).rsplit("_", 1)[1].split(".")[0])
json.dump(raw[c][run], open(out, "w"))
'''

# --lockstep's stand-in: each configuration serves windows at a fixed rate
# with a fixed peak; tensor-sync's losses differ from native's
SERVE = r'''
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench"))
import lockstep
a = sys.argv
if a[a.index("--alloc") + 1] == "native":
    c = "native-expandable" if os.environ.get("PYTORCH_CUDA_ALLOC_CONF") else "native"
else:
    c = "tensor-" + os.environ["NXQ_TORCH_FREE"]
rate = {"native": 50, "native-expandable": 50, "tensor-async": 51, "tensor-sync": 49}[c]
peak = {"native": 1216, "native-expandable": 1164, "tensor-async": 1150, "tensor-sync": 1170}[c]
for m in a[a.index("--models") + 1].split(","):
    lockstep.serve(m, lambda k: rate, lambda: {"nvml_peak_MiB": peak,
                   "losses": "65:" + ("bad" if c == "tensor-sync" else "good")})
lockstep.done()
'''

failed = 0


def check(cond, what):
    global failed
    print("%s %s" % ("ok  " if cond else "FAIL", what))
    if not cond:
        failed += 1


def run(tree, configs):
    env = dict(os.environ, PYTHONPATH=os.path.join(tree, "fake"), BENCH_FIXTURE=DATA)
    p = subprocess.run([sys.executable, os.path.join(tree, "bench", "bench_torch.py"),
                        "--runs", "3", "--configs", configs, "--out",
                        os.path.join(tree, "out.json")], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=120)
    return p.returncode, p.stdout.decode()


def row(out, workload, config):
    part = out.split("workload %s\n" % workload, 1)[1]
    for line in part.splitlines():
        if line.startswith("| %s |" % config):
            return [c.strip() for c in line.strip("|").split("|")]
    return None


def main():
    tree = tempfile.mkdtemp(prefix="nxq_bench_host_")
    try:
        for d in ("bench", "tests", "build", "fake/torch"):
            os.makedirs(os.path.join(tree, d))
        shutil.copy(os.path.join(TOP, "bench", "bench_torch.py"), os.path.join(tree, "bench"))
        open(os.path.join(tree, "tests", "torch_worker.py"), "w").write(WORKER)
        open(os.path.join(tree, "build", "libnxq_torch.so"), "w").close()
        open(os.path.join(tree, "fake", "torch", "__init__.py"), "w").write(
            "class cuda:\n    @staticmethod\n    def is_available():\n        return True\n")

        rc, out = run(tree, "native,native-expandable,tensor-sync,tensor-async,pool")
        check(rc == 0, "bench_torch.py on the recorded reports: exit 0")
        raw = json.load(open(DATA))

        def per_run(c, m):
            return [sorted(r["workloads"][m]["steps_per_s"])[1] for r in raw[c]]
        for m, c in (("small", "tensor-async"), ("decoder", "tensor-sync"), ("small", "pool")):
            x = sorted(a / b for a, b in zip(per_run(c, m), per_run("native", m)))[1]
            r = row(out, m, c)
            check(r is not None and r[3] == "%.3f" % x,
                  "%s %s: x native %s = the median of per-run ratios %.3f" %
                  (m, c, r and r[3], x))
        r = row(out, "decoder", "tensor-async")
        check(r is not None and r[4] == "7312" and r[5] == "0.988",
              "decoder tensor-async: peak 7312 MiB, 0.988x expandable segments (%s)" %
              (r and r[4:6]))
        r = row(out, "decoder", "pool")
        check(r is not None and r[5] == "1.391" and r[9] == "yes",
              "decoder pool: 1.391x expandable segments, losses bitwise equal")
        check("  decoder  tensor-sync   steps/s met  peak met  losses met" in out and
              "  small    pool          steps/s MISSED  peak MISSED  losses met" in out,
              "target lines: met and MISSED where the figures say so")
        summ = json.load(open(os.path.join(tree, "out.json")))["summary"]
        check(abs(summ["small"]["tensor-async"]["x_native"] - 0.845) < 0.001,
              "--out's summary has the paired ratio (%.3f)" %
              summ["small"]["tensor-async"]["x_native"])

        rc, out = run(tree, "native-expandable,tensor-async")
        r = row(out, "small", "tensor-async")
        check(rc == 0 and r is not None and r[3] == "-" and r[9] == "-" and
              "steps/s n/a (no native run)  peak met  losses n/a (no native run)" in out,
              "without native: x native and losses '-', targets n/a, peak still met")

        # --lockstep: bench_torch.py finds bench/lockstep.py two levels up
        lt = os.path.join(tree, "ls", "i", "p")
        for d in ("bench", "tests", "build"):
            os.makedirs(os.path.join(lt, d))
        os.makedirs(os.path.join(tree, "ls", "bench"))
        shutil.copy(os.path.join(TOP, "bench", "bench_torch.py"), os.path.join(lt, "bench"))
        shutil.copy(os.path.join(TOP, "..", "..", "bench", "lockstep.py"),
                    os.path.join(tree, "ls", "bench"))
        open(os.path.join(lt, "tests", "torch_worker.py"), "w").write(SERVE)
        open(os.path.join(lt, "build", "libnxq_torch.so"), "w").close()
        env = dict(os.environ, PYTHONPATH=os.path.join(tree, "fake"))
        p = subprocess.run([sys.executable, os.path.join(lt, "bench", "bench_torch.py"),
                            "--lockstep", "4", "--configs",
                            "native,native-expandable,tensor-async,tensor-sync"],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        out = p.stdout.decode()
        check(p.returncode == 0 and "| tensor-async | 51.000 | 51.000 | 1.0200 " in out,
              "--lockstep: tensor-async at 1.02x native in every round")
        check("  small    tensor-async  steps/s met  peak met  losses met" in out and
              "  decoder  tensor-sync   steps/s MISSED  peak MISSED  losses MISSED" in out,
              "--lockstep target lines: met and MISSED where the figures say so")
        p = subprocess.run([sys.executable, os.path.join(lt, "bench", "bench_torch.py"),
                            "--lockstep", "2", "--configs",
                            "native-expandable,tensor-async,tensor-sync"],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        out2 = p.stdout.decode()
        check(p.returncode == 0 and
              "  small    tensor-async  steps/s met  peak met  losses met" in out2 and
              "  small    tensor-sync   steps/s MISSED  peak MISSED  losses MISSED" in out2,
              "--lockstep without native: losses against expandable segments'")
        if failed:
            print(out, out2)
    finally:
        shutil.rmtree(tree)
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
