# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Side by side in lockstep: several long-lived processes, one per
configuration, take turns running one timed window each.

A configuration that can only be chosen before CUDA starts (an allocator,
LD_PRELOAD) needs a process of its own.  Timing such processes one after
the other compares minutes of a shared machine: clocks, neighbours and
caches drift by more than the few per cent asked about (bench_torch.py's
single runs spread 0.74-1.23x for every configuration, PyTorch's own
included).  Here every process is started, warmed up and kept; then, round
after round, each runs one window while the others wait on a pipe, in an
order that turns (order_of()).  A round's ratio compares windows seconds
apart, of the same steps (the same shapes and data), and the median over
rounds is the figure.

Coordinator (python3 bench/lockstep.py, or run() from another script):

    lockstep.py --rounds 15 --base bare [--profile DIR] \\
        --worker bare 'python3 w.py --serve' --worker shim 'env LD_PRELOAD=... python3 w.py --serve'

A worker NAME#2 is a second process of configuration NAME: a round's rate
for NAME is then the mean of its processes' windows, and the per-process
medians are printed, so that a difference fixed in one process (its
placement) shows apart from the configuration's.

Worker protocol (serve() below does the worker's side): lines that start
with "LS " on the worker's stdout; anything else there is copied to the
log.  The worker prints "LS ready WORKLOAD" when warmed up; the
coordinator writes "w K" (run window K, the same K for every process in a
round) and the worker answers "LS rate R"; "p K FILE" is the same under
torch.profiler with the table written to FILE; "next" ends the workload:
the worker prints "LS info KEY=VALUE..." lines, then "LS ready NEXT" or
"LS done".
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time


# ------------------------------------------------------------------ worker

def serve(workload, window, info=None, stdin=None, stdout=None):
    """The worker's side for one workload: window(k) runs timed window k and
    returns its rate (it synchronises the device itself); info() returns a
    dict printed when the workload ends."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    stdout.write("LS ready %s\n" % workload)
    stdout.flush()
    for line in stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] == "w":
            r = window(int(cmd[1]))
        elif cmd[0] == "p":
            r = profiled(window, int(cmd[1]), cmd[2])
        elif cmd[0] == "next":
            for k, v in (info() if info else {}).items():
                stdout.write("LS info %s=%s\n" % (k, v))
            stdout.flush()
            return
        else:
            raise SystemExit("lockstep: unknown command %r" % line)
        stdout.write("LS rate %.6f\n" % r)
        stdout.flush()
    raise SystemExit("lockstep: the coordinator went away")


def done(stdout=None):
    stdout = stdout or sys.stdout
    stdout.write("LS done\n")
    stdout.flush()


def profiled(window, k, path):
    import torch
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        r = window(k)
    with open(path, "w") as f:
        f.write(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=40))
        f.write("\n\n")
        f.write(prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=25))
    torch.cuda.synchronize()
    return r


def proc_used():
    """This process's device memory as NVML lists it (context included), or
    None: the same measure for every allocator, and one that neighbours in
    the lockstep do not move (the device's free memory would)."""
    try:
        import pynvml
        import torch
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h):
            if p.pid == os.getpid():
                return p.usedGpuMemory
    except Exception:
        pass
    return None


# ------------------------------------------------------------- coordinator

class Worker:
    def __init__(self, name, cmd, log):
        self.name = name
        self.config = name.split("#")[0]
        self.log = log
        self.p = subprocess.Popen(cmd, shell=True, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1)

    def expect(self, what, timeout_s):
        """Lines up to the next 'LS WHAT ...'; returns its words and the
        info lines met on the way."""
        infos = {}
        t0 = time.monotonic()
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("%s exited (rc %s) waiting for %r" % (
                    self.name, self.p.wait(), what))
            if line.startswith("LS "):
                w = line.split()
                if w[1] == "info":
                    k, _, v = line[8:].strip().partition("=")
                    infos[k] = v
                    continue
                if w[1] not in what.split("|"):
                    raise RuntimeError("%s said %r, expected %r" % (self.name, line, what))
                return w[1:], infos
            self.log.write("[%s] %s" % (self.name, line))
            if time.monotonic() - t0 > timeout_s:
                raise RuntimeError("%s: no %r within %d s" % (self.name, what, timeout_s))

    def send(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()


def order_of(names, r):
    """Round r's order: rounds 2i and 2i+1 start i processes further on,
    the second of them backwards, so that with any number of processes
    each goes first as often as last and follows each other one both
    ways (rotating and reversing every round would, for two processes,
    keep one order for ever)."""
    i = (r // 2) % len(names)
    o = names[i:] + names[:i]
    return o if r % 2 == 0 else o[::-1]


def run(workers, rounds, bases, log=sys.stderr, profile_dir=None, timeout_s=600):
    """workers: [(name, shell command)]; bases: the configurations the
    others are compared with.  Returns {workload: {...}}."""
    ws = [Worker(n, c, log) for n, c in workers]
    names = [w.name for w in ws]
    configs = list(dict.fromkeys(w.config for w in ws))  # the workers' order
    for b in bases:
        if b not in configs:
            raise SystemExit("lockstep: base %s is not a worker" % b)
    results = {}
    try:
        heads = [w.expect("ready|done", timeout_s)[0] for w in ws]
        while heads[0][0] == "ready":
            wl = heads[0][1]
            if any(h != heads[0] for h in heads):
                raise RuntimeError("workers disagree on the workload: %s" % heads)
            rates = {n: [] for n in names}
            for r in range(rounds):
                for n in order_of(names, r):
                    w = ws[names.index(n)]
                    w.send("w %d" % r)
                    rates[n].append(float(w.expect("rate", timeout_s)[0][1]))
            if profile_dir:
                for w in ws:
                    path = os.path.join(profile_dir, "profile-%s-%s.txt" % (wl, w.name.replace("#", "_")))
                    w.send("p %d %s" % (rounds, path))
                    w.expect("rate", timeout_s)
            infos = {}
            heads = []
            for w in ws:
                w.send("next")
                h, infos[w.name] = w.expect("ready|done", timeout_s)
                heads.append(h)
            results[wl] = summarise(ws, configs, rates, rounds, bases, infos)
    finally:
        for w in ws:
            try:
                w.p.stdin.close()
            except Exception:
                pass
        for w in ws:
            try:
                w.p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                w.p.kill()
    return results


def quartiles(xs):
    if len(xs) < 4:
        return min(xs), max(xs)
    q = statistics.quantiles(xs, n=4)
    return q[0], q[2]


def summarise(ws, configs, rates, rounds, bases, infos):
    per_config = {}
    for c in configs:
        procs = [w.name for w in ws if w.config == c]
        per_round = [statistics.fmean(rates[p][r] for p in procs) for r in range(rounds)]
        per_config[c] = {"procs": procs, "per_round": per_round,
                         "median": statistics.median(per_round),
                         "proc_medians": {p: statistics.median(rates[p]) for p in procs}}
    for c in configs:
        per_config[c]["x"] = {}
        for b in bases:
            x = [p / q for p, q in zip(per_config[c]["per_round"], per_config[b]["per_round"])]
            per_config[c]["x"][b] = {"ratios": x, "median": statistics.median(x),
                                     "q": quartiles(x), "above": sum(v > 1.0 for v in x)}
    return {"rounds": rounds, "bases": bases, "configs": per_config, "infos": infos}


def report(results, out=sys.stdout):
    for wl, res in results.items():
        bases = res["bases"]
        out.write("\nlockstep %s: %d rounds; x B = the median over rounds of the round's rate "
                  "over B's in the same round (quartiles; rounds above 1)\n" % (wl, res["rounds"]))
        out.write("| configuration | rate (median) | per process |%s\n|---|---|---|%s\n" % (
            "".join(" x %s |" % b for b in bases), "---|" * len(bases)))
        for c, r in res["configs"].items():
            out.write("| %s | %.3f | %s |%s\n" % (
                c, r["median"], " ".join("%.3f" % v for v in r["proc_medians"].values()),
                "".join(" %.4f (%.4f..%.4f; %d/%d) |" % (
                    x["median"], x["q"][0], x["q"][1], x["above"], res["rounds"])
                    for x in (r["x"][b] for b in bases))))
        for n, i in res["infos"].items():
            if i:
                out.write("  %s: %s\n" % (n, " ".join("%s=%s" % kv for kv in i.items())))
    out.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--base", required=True, action="append",
                    help="a configuration to compare with (may repeat)")
    ap.add_argument("--worker", nargs=2, action="append", metavar=("NAME", "CMD"), required=True)
    ap.add_argument("--profile", metavar="DIR")
    ap.add_argument("--log")
    ap.add_argument("--json")
    ap.add_argument("--timeout", type=int, default=600, help="seconds for any one answer")
    a = ap.parse_args()
    log = open(a.log, "a") if a.log else sys.stderr
    res = run([tuple(w) for w in a.worker], a.rounds, a.base, log, a.profile, a.timeout)
    report(res)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
