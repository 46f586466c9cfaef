# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Multi-tenant serving on one GPU (issue 31, item 1): N server processes
(server.py), each a Llama-shaped model with random weights whose KV cache
grows as requests arrive and shrinks as they end, under one seeded bursty
load (load.py), in three regimes on the same GPU:

  A       a static split: PyTorch's caching allocator (expandable
          segments) with torch.cuda.set_per_process_memory_fraction(share)
  B       hard caps without lending: nxquota, min = max = share
  C       nxquota with lending and recall: min = share, max = capacity;
          the integration's tensor route, a RECALL ticket preempts requests
          of a borrower (server.py)
  C-shim  as C, but PyTorch unmodified under the shim
          (LD_PRELOAD=preload/libnxquota-preload.so)
  C-pool  as C, the integration's MemPool route (NXQ_TORCH_ROUTE=pool)

    python3 bench/serve/serve.py --out DIR [--regimes A,B,C] [--seeds 1,2,3]
        [--tenants 4] [--duration 30] [--engine real|mock] [--probe-rounds 20]

Each run (regime, seed) writes DIR/REGIME-sSEED/: load.json (the load:
parameters, phases, every request), TENANT.json and TENANT.csv (each
server's requests, refusals, preemptions, ticket events, memory samples),
samples.csv (the coordinator's samples: each cgroup's charge and borrowed
bytes from nxquotactl, the device's used memory from NVML), summary.json
and memory.png (memory per tenant over time, bursts shaded, tickets
marked; plot.py).  DIR/report.txt: the per-tenant tables, the medians over
seeds, the targets (C against A) met or missed.  The recall probe
(--probe-rounds): an idle borrower holding --probe-bytes (8 GiB on a GPU)
of a guaranteed tenant's memory, which the tenant then asks for; the time
from ticket to grant, per round.

Sizes: capacity = the device's free memory less a CUDA context per server
and a margin (--ctx-bytes, --margin-bytes); share = capacity / N.  The
load asks, in a burst, --peak times the KV tokens a share holds after the
weights (load.py).  SLO: time to first token <= --slo-ttft s and time per
output token <= --slo-tpot s; a request not finished by the end counts as
a miss.

Needs root and cgroup2 for B and C (nxquotad is the authority: no kernel
module); --engine mock runs on tests/fakecuda (NXQ_FAKE_CUDA=1 or
LD_LIBRARY_PATH naming it) with a mock model and no PyTorch.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import load as loadgen  # noqa: E402
import metrics  # noqa: E402

GiB = 1 << 30
MiB = 1 << 20


def cgroot():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            if " - cgroup2 " in line:
                return line.split()[4]
    return None


def pick(*cands):
    for c in cands:
        if c and os.access(c, os.X_OK):
            return c
    return None


class Authority:
    """nxquotad on a temporary socket directory, nxquotactl to drive it."""

    def __init__(self, nxquotad, ctl, root):
        self.dir = tempfile.mkdtemp(prefix="nxq-serve.")
        self.env = dict(os.environ, NXQUOTA_SOCKET=self.dir + "/nxquota.sock",
                        NXQUOTA_CONTROL=self.dir + "/control.sock")
        os.mkdir(self.dir + "/state")
        self.log = open(self.dir + "/nxquotad.log", "w")
        self.p = subprocess.Popen([nxquotad, "-s", self.env["NXQUOTA_SOCKET"], "-c",
                                   self.env["NXQUOTA_CONTROL"], "-S", self.dir + "/state",
                                   "-C", root], stdout=self.log, stderr=subprocess.STDOUT,
                                  env=self.env)
        self.ctl_path = ctl
        for _ in range(100):
            if os.path.exists(self.env["NXQUOTA_SOCKET"]) and \
                    os.path.exists(self.env["NXQUOTA_CONTROL"]):
                return
            if self.p.poll() is not None:
                break
            time.sleep(0.05)
        raise SystemExit("serve: nxquotad did not start: " + open(self.dir + "/nxquotad.log").read())

    def ctl(self, *args, check=True):
        r = subprocess.run([self.ctl_path] + [str(x) for x in args], env=self.env,
                           capture_output=True, text=True)
        if check and r.returncode:
            raise SystemExit("serve: nxquotactl %s: %s%s" % (" ".join(map(str, args)), r.stdout,
                                                             r.stderr))
        return r.stdout

    def status(self):
        try:
            return json.loads(self.ctl("--json", "status", check=False))
        except ValueError:
            return None

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class Device:
    """What the coordinator knows of the GPU: key, total, free, NVML."""

    def __init__(self, a, tenant_bin):
        out = subprocess.run([tenant_bin, "--probe"], capture_output=True, text=True).stdout
        w = out.split()
        if not w or w[0] != "key":
            raise SystemExit("serve: skipped: no GPU (gpu_tenant --probe: %s)" % out.strip())
        self.key, self.total, self.free = w[1], int(w[3]), int(w[5])
        self.nvml = None
        if a.engine == "real":
            try:
                import pynvml
                pynvml.nvmlInit()
                self.nvml = pynvml
                self.h = pynvml.nvmlDeviceGetHandleByIndex(0)
                self.name = pynvml.nvmlDeviceGetName(self.h)
            except Exception as e:
                print("serve: no NVML (%s): HBM in use is the sum of the charges" % e)
        if self.nvml is None:
            self.name = "fake" if a.engine == "mock" else "?"

    def used(self):
        if self.nvml is None:
            return None
        return self.nvml.nvmlDeviceGetMemoryInfo(self.h).used

    def proc_used(self):
        if self.nvml is None:
            return {}
        try:
            return {p.pid: p.usedGpuMemory for p in
                    self.nvml.nvmlDeviceGetComputeRunningProcesses(self.h)}
        except Exception:
            return {}


def server_cmd(a, regime, name, run_dir, share, cap_total, dev):
    cmd = [sys.executable, os.path.join(HERE, "server.py"), "--tenant", name, "--load",
           os.path.join(run_dir, "load.json"), "--out", run_dir, "--engine", a.engine,
           "--shape", a.shape, "--seed", str(a.model_seed), "--end-s",
           str(a.duration + a.drain), "--min", str(share)]
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    if a.engine == "mock":
        cmd += ["--mock-kv-token", str(a.mock_kv_token), "--mock-weights", str(a.mock_weights)]
    if regime == "A":
        if a.engine == "real":
            cmd += ["--alloc", "native", "--fraction", "%.6f" % (share / dev.total)]
            env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
        else:   # the mock's stand-in for the fraction: a process-local cap
            cmd += ["--alloc", "nxq"]
            env.update(NXQ_TORCH_CONTEXT="unmanaged", NXQ_TORCH_CAP=str(share))
    elif regime == "C-shim":
        cmd += ["--alloc", "shim", "--cgroup", "/nxqserve-" + name]
        env["LD_PRELOAD"] = os.path.join(TOP, "preload", "libnxquota-preload.so")
        env["NXQ_PRELOAD_WAIT_MS"] = str(int(a.guarantee_wait_ms))
        env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    else:
        cmd += ["--alloc", "nxq", "--cgroup", "/nxqserve-" + name]
        env["NXQ_TORCH_CONTEXT"] = "managed"
        env.pop("NXQ_TORCH_CAP", None)
        if regime != "B":       # B: nothing to wait for, a charge past max is refused
            env["NXQ_TORCH_GROW_TIMEOUT_MS"] = str(int(a.guarantee_wait_ms))
        if regime == "C-pool":
            env["NXQ_TORCH_ROUTE"] = "pool"
    return cmd, env


def run_one(a, regime, seed, dev, tools, out_dir):
    names = ["t%d" % i for i in range(a.tenants)]
    run_dir = os.path.join(out_dir, "%s-s%d" % (regime, seed))
    os.makedirs(run_dir, exist_ok=True)
    cap_total = a.capacity
    share = cap_total // a.tenants
    kv_share = max(share - a.weights_bytes - a.act_bytes, 0) // a.kv_token
    ld = loadgen.make(seed, names, a.duration, kv_share, peak=a.peak, tpot_est=a.tpot_est,
                      on_s=a.on_s, off_s=a.off_s, prompt_median=a.prompt_median,
                      out_median=a.out_median, out_max=a.out_max)
    ld.update(regime=regime, capacity=cap_total, share=share, device=dev.name,
              device_total=dev.total, kv_token=a.kv_token, slo_ttft=a.slo_ttft,
              slo_tpot=a.slo_tpot, shape=a.shape)
    with open(os.path.join(run_dir, "load.json"), "w") as f:
        json.dump(ld, f)
    auth = None
    cgs = []
    root = cgroot()
    procs = {}
    t_setup = time.time()
    try:
        if regime != "A":
            if root is None or os.geteuid() != 0:
                raise SystemExit("serve: regime %s needs root and cgroup2" % regime)
            auth = Authority(tools["nxquotad"], tools["nxquotactl"], root)
            if a.engine == "real":
                auth.ctl("devices", "sync")
            else:
                auth.ctl("devices", "register", dev.key, dev.total)
            auth.ctl("devices", "capacity", dev.key, cap_total)
            for n in names:
                cg = "/nxqserve-" + n
                os.makedirs(root + cg, exist_ok=True)
                cgs.append(root + cg)
                if regime == "B":
                    auth.ctl("set", cg, dev.key, "max=%d" % share, "min=%d" % share)
                else:
                    auth.ctl("set", cg, dev.key, "max=%d" % cap_total, "min=%d" % share)
        for n in names:
            cmd, env = server_cmd(a, regime, n, run_dir, share, cap_total, dev)
            if auth:
                env.update(NXQUOTA_SOCKET=auth.env["NXQUOTA_SOCKET"])
            err = open(os.path.join(run_dir, n + ".err"), "w")
            procs[n] = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=err, text=True)
        ready = {}
        for n, p in procs.items():
            line = readline_timeout(p, a.ready_s)
            if not line or not line.startswith("SV ready"):
                raise RuntimeError("%s: not ready (%r); see %s.err" % (n, line, n))
            ready[n] = line.split()[2:]
        setup_s = time.time() - t_setup
        t0 = time.monotonic_ns() + int(0.5e9)
        for p in procs.values():
            p.stdin.write("go %d\n" % t0)
            p.stdin.flush()
        samples = sample_loop(a, procs, auth, dev, names, t0)
        for n, p in procs.items():
            p.wait(timeout=60)
        rcs = {n: p.returncode for n, p in procs.items()}
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
        if auth:
            auth.stop()
        for c in cgs:
            try:
                os.rmdir(c)
            except OSError:
                pass
    with open(os.path.join(run_dir, "samples.csv"), "w") as f:
        f.write("t_s,tenant,current,borrowed,nvml_proc\n")
        for s in samples["cg"]:
            f.write("%.4f,%s,%d,%d,%d\n" % s)
    with open(os.path.join(run_dir, "device.csv"), "w") as f:
        f.write("t_s,used,total\n")
        for s in samples["dev"]:
            f.write("%.4f,%d,%d\n" % s)
    tenants = {}
    for n in names:
        with open(os.path.join(run_dir, n + ".json")) as f:
            tenants[n] = json.load(f)
    summ = metrics.summarise(ld, tenants, samples, a.slo_ttft, a.slo_tpot)
    summ.update(regime=regime, seed=seed, setup_s=round(setup_s, 1), returncodes=rcs,
                ready=ready)
    with open(os.path.join(run_dir, "summary.json"), "w") as f:
        json.dump(summ, f, indent=1)
    try:
        import plot
        plot.draw(run_dir, ld, tenants, samples, summ)
    except Exception as e:      # the figures must not lose the run
        print("serve: %s-s%d: no picture (%s: %s)" % (regime, seed, type(e).__name__, e))
    return summ


def readline_timeout(p, timeout):
    box = []
    t = threading.Thread(target=lambda: box.append(p.stdout.readline()), daemon=True)
    t.start()
    t.join(timeout)
    return box[0].strip() if box else None


def sample_loop(a, procs, auth, dev, names, t0):
    """Every --coord-sample-ms until every server has exited: the
    authority's view of each cgroup (current, borrowed), NVML's per-process
    and device used memory."""
    out = {"cg": [], "dev": []}
    pids = {procs[n].pid: n for n in names}
    deadline = time.monotonic() + a.duration + a.drain + 90
    while time.monotonic() < deadline:
        if all(p.poll() is not None for p in procs.values()):
            break
        t = (time.monotonic_ns() - t0) / 1e9
        used = dev.used()
        if used is not None:
            out["dev"].append((t, used, dev.total))
        pu = dev.proc_used()
        cur = {}
        if auth:
            st = auth.status()
            for b in (st or {}).get("budgets", []):
                n = b.get("path", "").replace("/nxqserve-", "")
                if n in names:
                    cur[n] = (b.get("current") or 0, b.get("borrowed") or 0)
        for pid, n in pids.items():
            c, bo = cur.get(n, (0, 0))
            out["cg"].append((t, n, c, bo, pu.get(pid, 0) or 0))
        time.sleep(a.coord_sample_ms / 1e3)
    return out


def probe_recall(a, dev, tools, out_dir):
    """An idle borrower gives back what a guaranteed tenant asks for.  The
    device's capacity is set to 2 x bytes; G has min = bytes, B none.
    Each round: B grows to 2 x bytes (half of it G's idle guarantee, lent)
    and frees it (idle: mapped and charged); G asks for bytes and waits
    (NXQ_TORCH_GROW_TIMEOUT_MS); nxquotad tickets B (RECALL), B's library
    unmaps the idle memory and answers; G is granted.  Then both give
    everything back."""
    root = cgroot()
    if root is None or os.geteuid() != 0:
        return {"skipped": "needs root and cgroup2"}
    nbytes = a.probe_bytes
    auth = Authority(tools["nxquotad"], tools["nxquotactl"], root)
    cgs = [root + "/nxqserve-probe-g", root + "/nxqserve-probe-b"]
    ps = {}
    rounds = []
    try:
        auth.ctl("devices", "sync") if a.engine == "real" else \
            auth.ctl("devices", "register", dev.key, dev.total)
        slack = 0
        auth.ctl("devices", "capacity", dev.key, 2 * nbytes)
        for c in cgs:
            os.makedirs(c, exist_ok=True)
        auth.ctl("set", "/nxqserve-probe-g", dev.key, "max=%d" % (2 * nbytes + slack),
                 "min=%d" % nbytes)
        auth.ctl("set", "/nxqserve-probe-b", dev.key, "max=%d" % (2 * nbytes + slack))
        for n, cg, extra in (("g", "/nxqserve-probe-g", {"NXQ_TORCH_GROW_TIMEOUT_MS": "5000"}),
                             ("b", "/nxqserve-probe-b", {})):
            env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1",
                       NXQ_TORCH_CONTEXT="managed",
                       NXQUOTA_SOCKET=auth.env["NXQUOTA_SOCKET"], **extra)
            ps[n] = subprocess.Popen(
                [sys.executable, os.path.join(HERE, "server.py"), "--probe", "--tenant", n,
                 "--engine", a.engine, "--alloc", "nxq", "--cgroup", cg],
                env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=open(os.path.join(out_dir, "probe-%s.err" % n), "w"), text=True)
        for n, p in ps.items():
            line = readline_timeout(p, a.ready_s)
            if line != "SV ready probe":
                raise RuntimeError("probe %s: %r" % (n, line))

        def ask(n, cmd):
            ps[n].stdin.write(cmd + "\n")
            ps[n].stdin.flush()
            line = readline_timeout(ps[n], 60)
            if not line or not line.startswith("SV "):
                raise RuntimeError("probe %s %s: %r" % (n, cmd, line))
            return line.split(None, 2)

        for i in range(a.probe_rounds):
            # B takes the whole device (G's idle guarantee with it)
            r = ask("b", "fill %d" % (256 * MiB if a.engine == "real" else 8 * MiB))
            if r[1] != "ok" or int(r[2]) < nbytes + nbytes // 2:
                raise RuntimeError("probe: the borrower could not grow: %r" % r)
            ask("b", "free")
            ask("b", "events")      # drain
            w = ask("g", "grow %d" % nbytes)[1:]
            g0, g1 = [int(x) for x in w[1].split()[:2]]
            ev = json.loads(ask("b", "events")[2])
            # G is granted as B's answer uncharges, before B's thread
            # records the answer: wait for it (1 s at most)
            for _ in range(50):
                tk = [e for e in ev if e["type"] == "ticket"]
                an = [e for e in ev if e["type"] == "answer"]
                if not tk or {e["generation"] for e in tk} <= {e["generation"] for e in an}:
                    break
                time.sleep(0.02)
                ev += json.loads(ask("b", "events")[2])
            rounds.append({"granted": w[0] == "ok", "ask_to_grant_ms": (g1 - g0) / 1e6,
                           "ticket_to_grant_ms": (g1 - tk[0]["t_ns"]) / 1e6 if tk else None,
                           "ticket_to_answer_ms": (an[-1]["t_ns"] - tk[0]["t_ns"]) / 1e6
                           if tk and an else None,
                           "tickets": len(tk), "levels": sorted({e["level"] for e in tk}),
                           "released": sum(e["released"] for e in an)})
            ask("g", "free")
            ask("g", "release")
            ask("b", "release")
        for n in ps:
            ps[n].stdin.write("quit\n")
            ps[n].stdin.flush()
            ps[n].wait(30)
    finally:
        for p in ps.values():
            if p.poll() is None:
                p.kill()
        auth.stop()
        for c in cgs:
            try:
                os.rmdir(c)
            except OSError:
                pass
    return metrics.probe_summary(rounds, nbytes)


def resummarise(run_dir, old, slo):
    with open(os.path.join(run_dir, "load.json")) as f:
        ld = json.load(f)
    tenants = {}
    for n in ld["tenants"]:
        with open(os.path.join(run_dir, n + ".json")) as f:
            tenants[n] = json.load(f)
    samples = {"cg": [], "dev": []}
    with open(os.path.join(run_dir, "samples.csv")) as f:
        next(f)
        for line in f:
            t, n, c, b, p = line.strip().split(",")
            samples["cg"].append((float(t), n, int(c), int(b), int(p)))
    with open(os.path.join(run_dir, "device.csv")) as f:
        next(f)
        for line in f:
            t, u, tot = line.strip().split(",")
            samples["dev"].append((float(t), int(u), int(tot)))
    s = metrics.summarise(ld, tenants, samples, slo[0], slo[1])
    s.update({k: old[k] for k in ("regime", "seed", "setup_s", "returncodes", "ready")})
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--regimes", default="A,B,C")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--tenants", type=int, default=4)
    ap.add_argument("--duration", type=float, default=30.0, help="seconds of arrivals")
    ap.add_argument("--drain", type=float, default=15.0, help="seconds after the last arrival")
    ap.add_argument("--engine", choices=["real", "mock"], default="real")
    ap.add_argument("--shape", default="llama-8l")
    ap.add_argument("--model-seed", type=int, default=1)
    ap.add_argument("--peak", type=float, default=2.0)
    ap.add_argument("--tpot-est", type=float, default=0.06)
    ap.add_argument("--prompt-median", type=int, default=2048)
    ap.add_argument("--out-median", type=int, default=64)
    ap.add_argument("--out-max", type=int, default=512)
    ap.add_argument("--merge", nargs="+", metavar="DIR",
                    help="only the report, from the results.json of earlier runs")
    ap.add_argument("--on-s", type=float, default=8.0)
    ap.add_argument("--off-s", type=float, default=14.0)
    ap.add_argument("--slo-ttft", type=float, default=2.0)
    ap.add_argument("--slo-tpot", type=float, default=0.2)
    ap.add_argument("--ctx-bytes", type=int, default=768 * MiB)
    ap.add_argument("--margin-bytes", type=int, default=2 * GiB)
    ap.add_argument("--act-bytes", type=int, default=1 * GiB,
                    help="per tenant, activations and workspaces beside weights and KV")
    ap.add_argument("--capacity", type=int, default=0, help="bytes for all tenants (0: derived)")
    ap.add_argument("--guarantee-wait-ms", type=float, default=400,
                    help="C: how long an allocation waits for nxquotad's grant")
    ap.add_argument("--probe-rounds", type=int, default=20)
    ap.add_argument("--probe-bytes", type=int, default=0, help="0: 8 GiB (real), 64 MiB (mock)")
    ap.add_argument("--ready-s", type=float, default=240)
    ap.add_argument("--coord-sample-ms", type=float, default=100)
    ap.add_argument("--mock-kv-token", type=int, default=64 << 10)
    ap.add_argument("--mock-weights", type=int, default=64 << 20)
    a = ap.parse_args()
    # a TERM (timeout) unwinds: servers killed, nxquotad stopped, cgroups removed
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.makedirs(a.out, exist_ok=True)
    if a.merge:
        # the figures again from what the runs left (every request's times),
        # with this command line's SLO
        results, probe = [], None
        slo = (a.slo_ttft, a.slo_tpot)
        for d in a.merge:
            with open(os.path.join(d, "results.json")) as f:
                r = json.load(f)
            probe = r["probe"] or probe
            for k, v in r["args"].items():
                if k not in ("merge", "out", "slo_ttft", "slo_tpot"):
                    setattr(a, k, v)
            for old in r["runs"]:
                if "failed" in old:
                    results.append(old)
                    continue
                results.append(resummarise(os.path.join(d, "%s-s%d" % (old["regime"],
                                                                        old["seed"])), old, slo))
        rep = metrics.report(results, probe, a)
        with open(os.path.join(a.out, "report.txt"), "w") as f:
            f.write(rep)
        print(rep)
        return
    tools = {
        "nxquotad": pick(os.environ.get("NXQUOTAD"), TOP + "/build/nxquotad-demo/nxquotad",
                         TOP + "/build/demo-gpu-bin/nxquotad"),
        "nxquotactl": pick(os.environ.get("NXQUOTACTL"), TOP + "/tools/nxquotactl",
                           TOP + "/build/demo-gpu-bin/nxquotactl"),
        "gpu_tenant": pick(TOP + "/bench/gpu_tenant", TOP + "/build/demo-gpu-bin/gpu_tenant"),
    }
    missing = [k for k, v in tools.items() if not v]
    if missing:
        raise SystemExit("serve: not built: %s (make -C bench; make -C daemon; make -C tools; "
                         "or scripts/demo-gpu.sh --prebuild)" % ", ".join(missing))
    dev = Device(a, tools["gpu_tenant"])
    if a.engine == "real":
        sys.path.insert(0, HERE)
        import llm_sizes
        a.kv_token, a.weights_bytes = llm_sizes.sizes(a.shape)
    else:
        a.kv_token, a.weights_bytes = a.mock_kv_token, a.mock_weights
    if not a.capacity:
        a.capacity = dev.free - a.tenants * (a.ctx_bytes if a.engine == "real" else 0) \
            - (a.margin_bytes if a.engine == "real" else 0)
    if not a.probe_bytes:
        a.probe_bytes = 8 * GiB if a.engine == "real" else 64 * MiB
    if a.engine == "mock":
        a.act_bytes = 0
    regimes = a.regimes.split(",")
    seeds = [int(s) for s in a.seeds.split(",")]
    print("serve: %s, %s total, %s free; capacity %.1f GiB for %d tenants (share %.1f GiB, "
          "KV %.0f tokens each); regimes %s, seeds %s, %g s + %g s" % (
              dev.name, dev.total, dev.free, a.capacity / GiB, a.tenants,
              a.capacity / a.tenants / GiB,
              (a.capacity // a.tenants - a.weights_bytes - a.act_bytes) / a.kv_token,
              ",".join(regimes), seeds, a.duration, a.drain), flush=True)
    probe = None
    if a.probe_rounds:          # first: the target that a run cut short must not lose
        try:
            probe = probe_recall(a, dev, tools, a.out)
        except (RuntimeError, OSError, subprocess.SubprocessError) as e:
            probe = {"failed": str(e)}
        print("serve: recall probe: %s" % {k: v for k, v in probe.items()
                                             if k != "rounds_detail"}, flush=True)
    results = []
    for seed in seeds:
        for rg in regimes:
            t = time.time()
            try:
                s = run_one(a, rg, seed, dev, tools, a.out)
            except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                print("serve: %s seed %d FAILED: %s" % (rg, seed, e), flush=True)
                results.append({"regime": rg, "seed": seed, "failed": str(e)})
                continue
            results.append(s)
            print(metrics.run_line(s) + " (%.0f s)" % (time.time() - t), flush=True)
            with open(os.path.join(a.out, "results.json"), "w") as f:   # so far
                json.dump({"runs": results, "probe": probe, "args": vars(a)}, f, indent=1)
    rep = metrics.report(results, probe, a)
    with open(os.path.join(a.out, "report.txt"), "w") as f:
        f.write(rep)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"runs": results, "probe": probe, "args": vars(a)}, f, indent=1)
    print(rep, flush=True)
    failed = [r for r in results if "failed" in r] or (probe or {}).get("failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
