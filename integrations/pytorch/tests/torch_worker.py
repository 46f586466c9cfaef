# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""One PyTorch process of the GPU tests and the benchmark.

An allocator can only be chosen before CUDA is initialised, so every run
(native caching allocator or libnxquota) is its own process; the parent
(run_gpu_tests.py, bench_torch.py) compares their JSON reports.

    torch_worker.py MODE --alloc native|nxq --out FILE [options]

--alloc nxq takes the route from NXQ_TORCH_ROUTE (nxquota_torch's default
when unset); native with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True is
the caching allocator with expandable segments (the variable is read when
CUDA starts, so the parent sets it).

MODE train    N training steps of a small transformer (random weights, fixed
              seed, no downloads), then inference; per-step losses, the
              inference logits (saved to --logits) and allocator bookkeeping
              at fixed checkpoints (after the model is on the GPU, after
              every step, after inference)
MODE oom      train under a process-local cap (NXQ_TORCH_CAP) until an
              allocation is refused; what was raised, the arena afterwards,
              then a smaller allocation and a smaller training run
MODE release  train while a thread keeps asking the arena to release idle
              memory, and once from the training thread at --release-at
MODE bench    steps/s over timed windows and peak device memory, for the
              fixed-shape models of MODELS and the variable-shape decoder
              (DECODERS: batch and sequence length drawn at random each
              step from a seeded generator)
MODE serve    the same workloads, one timed window at a time when
              bench/lockstep.py asks (bench_torch.py --lockstep): every
              configuration's process alive at once, taking turns
"""
import argparse
import gc
import random
import json
import math
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

MODELS = {
    # vocab, d_model, heads, layers, ff, batch, seq
    "small": dict(vocab=1000, d=512, heads=8, layers=4, ff=2048, batch=32, seq=128),
    "tiny": dict(vocab=512, d=256, heads=4, layers=2, ff=1024, batch=8, seq=64),
    "large": dict(vocab=4096, d=1024, heads=16, layers=8, ff=4096, batch=32, seq=256),
}


class Net(nn.Module):
    def __init__(self, vocab, d, heads, layers, ff, seq, dropout=0.1):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(1, seq, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, heads, ff, dropout, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, vocab)

    def forward(self, x):
        return self.head(self.enc(self.emb(x) + self.pos[:, :x.shape[1]]))


# A small GPT-like decoder; shapes drawn per step.
DECODERS = {
    # vocab, d_model, heads, layers, ff, batch range, sequence-length range
    "decoder": dict(vocab=8192, d=512, heads=8, layers=6, ff=2048, batch=(4, 32),
                    seq=(32, 512)),
    "decoder-tiny": dict(vocab=1024, d=128, heads=4, layers=2, ff=512, batch=(2, 8),
                         seq=(16, 128)),
}


class Block(nn.Module):
    """Pre-norm decoder block: causal self-attention written out (matmuls and a
    masked softmax: deterministic forward and backward), then an MLP."""

    def __init__(self, d, heads, ff, dropout):
        super().__init__()
        self.h, self.scale = heads, (d // heads) ** -0.5
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, ff), nn.Linear(ff, d)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, mask):
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4)
        a = (q @ k.transpose(-2, -1)) * self.scale
        a = a.masked_fill(mask[:T, :T], float("-inf")).softmax(-1)
        y = (self.drop(a) @ v).transpose(1, 2).reshape(B, T, D)
        x = x + self.drop(self.proj(y))
        return x + self.drop(self.fc2(F.gelu(self.fc1(self.ln2(x)))))


class Decoder(nn.Module):
    def __init__(self, vocab, d, heads, layers, ff, max_seq, dropout=0.1):
        super().__init__()
        self.emb, self.pos = nn.Embedding(vocab, d), nn.Embedding(max_seq, d)
        self.blocks = nn.ModuleList(Block(d, heads, ff, dropout) for _ in range(layers))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)
        self.register_buffer("mask", torch.ones(max_seq, max_seq, dtype=torch.bool).triu(1),
                             persistent=False)

    def forward(self, x):
        T = x.shape[1]
        h = self.emb(x) + self.pos(torch.arange(T, device=x.device))
        for b in self.blocks:
            h = b(h, self.mask)
        return self.head(self.ln(h))


class DecoderData:
    """Step i's batch: shape from a seeded Python generator, tokens from a
    seeded CUDA generator (no host-to-device copy; the same in every run)."""

    def __init__(self, cfg, seed, steps):
        r = random.Random(seed)
        self.shapes = [(r.randint(*cfg["batch"]), r.randint(*cfg["seq"])) for _ in range(steps)]
        self.vocab = cfg["vocab"]
        self.g = torch.Generator(device="cuda").manual_seed(seed + 1)

    def __getitem__(self, i):
        return torch.randint(self.vocab, self.shapes[i], device="cuda", generator=self.g)


def make_decoder(cfg, seed, steps):
    torch.manual_seed(seed)
    model = Decoder(cfg["vocab"], cfg["d"], cfg["heads"], cfg["layers"], cfg["ff"],
                    cfg["seq"][1]).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    return model, opt, DecoderData(cfg, seed, steps)


def setup(alloc):
    if alloc == "nxq":
        import nxquota_torch
        nxquota_torch.install(oom=os.environ.get("NXQ_TORCH_TEST_PLAIN") != "1")
        return nxquota_torch
    return None


def pool_route(nxq):
    return nxq is not None and nxq.route() == "pool"


def make(cfg, seed, steps):
    """Model and optimizer on the GPU, data on the CPU: all from the seed."""
    torch.manual_seed(seed)
    model = Net(cfg["vocab"], cfg["d"], cfg["heads"], cfg["layers"], cfg["ff"], cfg["seq"])
    g = torch.Generator().manual_seed(seed + 1)
    xs = torch.randint(cfg["vocab"], (steps, cfg["batch"], cfg["seq"]), generator=g)
    xt = torch.randint(cfg["vocab"], (cfg["batch"], cfg["seq"]), generator=g)
    model = model.cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    return model, opt, xs, xt


def step(model, opt, x, vocab):
    x = x.cuda()
    y = (x * 7 + 3) % vocab            # a learnable mapping: the loss goes down
    out = model(x)
    loss = F.cross_entropy(out.reshape(-1, vocab), y.reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.detach()


def bookkeeping(nxq):
    """What the allocator says is live, at a checkpoint (no GPU sync needed:
    both are host-side counters of allocations made and freed so far).
    Pool route: PyTorch's own counters (the caching allocator is in front)
    and, beside them, its segments against what libnxquota handed out."""
    if nxq is None or pool_route(nxq):
        s = torch.cuda.memory_stats()
        b = {"requested": s["requested_bytes.all.current"],
             "count": s["allocation.all.current"],
             "allocs": s["allocation.all.allocated"],
             "allocated": s["allocated_bytes.all.current"]}
        if nxq is not None:
            x = nxq.stats()
            b.update(segments=s["segment.all.current"], reserved=s["reserved_bytes.all.current"],
                     seg_allocs=s["num_device_alloc"], seg_frees=s["num_device_free"],
                     nxq_live=x["live_count"], nxq_requested=x["live_requested"],
                     nxq_mallocs=x["mallocs"], nxq_frees=x["frees"],
                     in_use=x["in_use"], rounded=x["live_rounded"])
        return b
    s = nxq.stats()
    return {"requested": s["live_requested"], "count": s["live_count"],
            "allocs": s["mallocs"], "rounded": s["live_rounded"],
            "in_use": s["in_use"], "arena_allocs": s["arena_allocs"],
            "frees": s["frees"], "arena_frees": s["arena_frees"]}


def tensors_of(model, opt):
    ts = [p for p in model.parameters()] + [p.grad for p in model.parameters() if p.grad is not None]
    for st in opt.state.values():
        ts += [v for v in st.values() if torch.is_tensor(v) and v.is_cuda]
    return ts


def consistent(s):
    return (s["mapped"] == s["in_use"] + s["pending"] + s["free"]
            and s["charged"] == s["mapped"] + s["retained"]
            and s["live_rounded"] == s["in_use"]
            and s["mallocs"] == s["arena_allocs"] and s["frees"] == s["arena_frees"])


def deterministic():
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def mode_train(a, nxq, rep):
    deterministic()
    if a.model in DECODERS:         # variable shapes; the inference batch is one more draw
        cfg = DECODERS[a.model]
        model, opt, xs = make_decoder(cfg, a.seed, a.steps + 1)
        xt = None
    else:
        cfg = MODELS[a.model]
        model, opt, xs, xt = make(cfg, a.seed, a.steps)
    rep["checkpoints"] = [["model", bookkeeping(nxq)]]
    losses = []
    bg = None
    if a.release_thread:
        bg = Releaser(nxq)
        bg.start()
    for i in range(a.steps):
        measure = nxq is not None and a.release_at == i
        if measure and bg is not None:
            bg.lock.acquire()          # this step's idle memory is for the measured release
        losses.append(step(model, opt, xs[i], cfg["vocab"]).item())
        rep["checkpoints"].append(["step%d" % i, bookkeeping(nxq)])
        if measure:
            torch.cuda.synchronize()
            pool = pool_route(nxq)      # PyTorch's statistics exist only then
            s0, t0 = nxq.stats(), torch.cuda.memory_stats() if pool else {}
            p0 = nxq.pool_info()
            free0 = torch.cuda.mem_get_info()[0]
            # As a ticket would be answered: from a thread of the C library's own.
            got = nxq.release(foreign_thread=True)
            free1 = torch.cuda.mem_get_info()[0]
            s1, t1 = nxq.stats(), torch.cuda.memory_stats() if pool else {}
            rep["release"] = {"returned": got, "before": s0, "after": s1,
                              "device_free_gain": free1 - free0,
                              "pool_before": p0, "pool_after": nxq.pool_info(),
                              "torch_before": {k: t0.get(k) for k in TORCH_KEYS},
                              "torch_after": {k: t1.get(k) for k in TORCH_KEYS}}
            if bg is not None:
                bg.lock.release()
    if bg is not None:
        bg.stop()
        rep["release_thread"] = {"calls": bg.calls, "bytes": bg.bytes, "errors": bg.errors}
    model.eval()
    with torch.no_grad():
        logits = model((xs[a.steps] if xt is None else xt).cuda()).float().cpu()
    rep["checkpoints"].append(["inference", bookkeeping(nxq)])
    if a.logits:
        torch.save(logits, a.logits)
    rep["losses"] = losses
    rep["logits_sum"] = float(logits.double().sum())
    if nxq is not None:
        s = nxq.stats()
        rep["stats"] = s
        rep["consistent"] = consistent(s)
        lo, hi = s["lo_ptr"], s["hi_ptr"]
        ts = tensors_of(model, opt)
        rep["tensors_checked"] = len(ts)
        rep["tensors_outside_arena"] = sum(1 for t in ts
                                           if not (lo <= t.data_ptr() < hi))
        try:
            torch.cuda.memory_allocated()
            rep["memory_allocated"] = "returned"
        except Exception as e:  # the pluggable allocator keeps no statistics
            rep["memory_allocated"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0])
        live = sum(t.untyped_storage().nbytes() for t in ts)
        rep["live_tensor_bytes"] = live


TORCH_KEYS = ("reserved_bytes.all.current", "segment.all.current", "allocated_bytes.all.current",
              "num_device_alloc", "num_device_free")


class Releaser(threading.Thread):
    """Keeps asking for everything idle, as pressure tickets would."""

    def __init__(self, nxq, period=0.005):
        super().__init__(daemon=True)
        self.nxq, self.period = nxq, period
        self.calls = self.bytes = self.errors = 0
        self.halt = threading.Event()
        self.lock = threading.Lock()     # held by the trainer to pause it

    def run(self):
        while not self.halt.is_set():
            with self.lock:
                try:
                    # Every other call from a C thread, as a ticket would come.
                    self.bytes += self.nxq.release(foreign_thread=self.calls % 2 == 1)
                    self.calls += 1
                except OSError:
                    self.errors += 1
            self.halt.wait(self.period)

    def stop(self):
        self.halt.set()
        self.join()


def mode_oom(a, nxq, rep):
    cfg = MODELS[a.model]
    deterministic()
    model, opt, xs, xt = make(cfg, a.seed, a.steps)
    rep["after_model"] = nxq.stats()
    err = None
    steps_done = 0
    try:
        for i in range(a.steps):
            step(model, opt, xs[i], cfg["vocab"]).item()
            steps_done += 1
    except Exception as e:  # what PyTorch raised is the point of the test
        err = e
    rep["steps_done"] = steps_done
    rep["raised"] = None if err is None else type(err).__module__ + "." + type(err).__name__
    rep["is_oom"] = isinstance(err, torch.cuda.OutOfMemoryError)
    rep["message"] = "" if err is None else str(err)[:600]
    rep["last_error"] = nxq.last_error()
    err = None
    rep["after_oom"] = nxq.stats()
    rep["after_oom_consistent"] = consistent(rep["after_oom"])
    # Drop everything: what is left live is PyTorch's own (cuBLAS workspaces).
    del model, opt
    gc.collect()
    torch.cuda.synchronize()
    if pool_route(nxq):
        nxq.release()       # the pool's cached segments go back through the allocator
    rep["after_cleanup"] = nxq.stats()
    rep["after_cleanup_consistent"] = consistent(rep["after_cleanup"])
    # A smaller allocation, then a smaller training run, under the same cap.
    t = torch.arange(1 << 20, device="cuda", dtype=torch.float64)
    rep["small_alloc_ok"] = float(t.sum()) == float((1 << 20) * ((1 << 20) - 1) / 2)
    del t
    small = MODELS["tiny"]
    model, opt, xs, _ = make(small, a.seed, 3)
    rep["small_losses"] = [step(model, opt, xs[i], small["vocab"]).item() for i in range(3)]
    torch.cuda.synchronize()
    rep["after_small"] = nxq.stats()
    rep["after_small_consistent"] = consistent(rep["after_small"])


def used_bytes():
    free, total = torch.cuda.mem_get_info()
    return total - free


def workload(name, seed, total, nxq):
    """mode_bench's and mode_serve's model of that name, its optimizer and
    data for total steps, on the GPU; the allocator's peaks reset."""
    if name in MODELS:
        cfg = MODELS[name]
        model, opt, xs, _ = make(cfg, seed, total)
    else:
        cfg = DECODERS[name]
        model, opt, xs = make_decoder(cfg, seed, total)
    if nxq is None or pool_route(nxq):
        torch.cuda.reset_peak_memory_stats()
    if nxq is not None:
        nxq.reset_peaks()
    return cfg, model, opt, xs


def give_back(nxq):
    """After a workload, with its tensors dropped: what the allocator
    holds back to the driver, so that the next workload starts alike."""
    gc.collect()
    torch.cuda.synchronize()
    if nxq is None:
        torch.cuda.empty_cache()
    else:
        nxq.release()


def mode_bench(a, nxq, rep):
    """Per workload: --warmup steps, then --windows windows of --steps steps
    (no per-step synchronisation; a window ends with one).  Peak device
    memory, the same measure for every allocator: the device's used memory
    (cudaMemGetInfo: total - free) read after every step, highest value
    minus the value read before the model was built (after CUDA, cuBLAS and
    the allocator were warmed up): peak_used; and the same highest value
    minus the value read when the CUDA context was up and nothing was
    allocated yet: peak_total, which counts what each allocator reserved
    for the warm-up as well (expandable segments map 20 MiB pages, the
    arena smaller handles, so peak_used alone moves with that choice).  Every allocator here keeps what it got
    until asked (the caching allocator, expandable segments, the arena with
    retain_idle=all), so the reading after a step is its peak."""
    deterministic()
    torch.cuda.init()
    ctx = used_bytes()              # the context alone: nothing allocated yet
    rep["ctx_used"] = ctx
    w = torch.ones(64, 64, device="cuda", requires_grad=True)
    (w @ w).sum().backward()        # cuBLAS handle and workspace before the baseline
    del w
    torch.cuda.synchronize()
    rep["workloads"] = {}
    for name in a.models.split(","):
        total = a.warmup + a.windows * a.steps
        gc.collect()
        torch.cuda.synchronize()
        base = used_bytes()
        cfg, model, opt, xs = workload(name, a.seed, total, nxq)
        peak = used_bytes()
        losses = []
        for i in range(a.warmup):
            losses.append(step(model, opt, xs[i], cfg["vocab"]))
            peak = max(peak, used_bytes())
        torch.cuda.synchronize()
        rates = []
        for wi in range(a.windows):
            t0 = time.perf_counter()
            for i in range(a.warmup + wi * a.steps, a.warmup + (wi + 1) * a.steps):
                losses.append(step(model, opt, xs[i], cfg["vocab"]))
                peak = max(peak, used_bytes())
            torch.cuda.synchronize()
            rates.append(a.steps / (time.perf_counter() - t0))
        r = {"steps_per_s": rates, "losses": [float(v) for v in losses],
             "peak_used": peak - base, "base_used": base,
             "peak_total": peak - ctx,
             "shapes": getattr(xs, "shapes", None) and xs.shapes[:8]}
        if nxq is None or pool_route(nxq):
            r["peak_reserved"] = torch.cuda.max_memory_reserved()
            r["peak_allocated"] = torch.cuda.max_memory_allocated()
        if nxq is not None:
            s = nxq.stats()
            r.update(peak_mapped=s["peak_mapped"], peak_charged=s["peak_charged"],
                     peak_rounded=s["peak_rounded"], grows=s["grows"], mallocs=s["mallocs"])
        rep["workloads"][name] = r
        del model, opt, xs, losses
        give_back(nxq)


def mode_serve(a, nxq, rep):
    """mode_bench's workloads in lockstep (bench/lockstep.py): per workload,
    --warmup steps, then window K (steps warmup + K * steps ...) whenever
    the coordinator asks, up to --windows of them.  Nothing is read per
    step.  At each workload's end it reports this process's device memory
    as NVML lists it (its peak: every allocator here keeps what it got),
    less its reading when the context was up, the allocator's own peak,
    and a digest of every loss, which must equal the native process's."""
    import hashlib
    sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "bench"))
    import lockstep
    deterministic()
    torch.cuda.init()
    used_bytes()                    # the context, nothing allocated yet
    ctx = lockstep.proc_used()
    w = torch.ones(64, 64, device="cuda", requires_grad=True)
    (w @ w).sum().backward()
    del w
    torch.cuda.synchronize()
    def allocs():
        if nxq is None or pool_route(nxq):
            return torch.cuda.memory_stats()["allocation.all.allocated"]
        return nxq.stats()["mallocs"]

    for name in a.models.split(","):
        if name == "pairs":
            serve_pairs(a, lockstep, allocs)
            continue
        total = a.warmup + a.windows * a.steps
        cfg, model, opt, xs = workload(name, a.seed, total, nxq)
        losses = [step(model, opt, xs[i], cfg["vocab"]) for i in range(a.warmup)]
        torch.cuda.synchronize()
        counted = [0, 0]                # steps, allocations in the timed windows

        def window(k):
            if k >= a.windows:
                raise SystemExit("serve: window %d of %d" % (k, a.windows))
            n0 = allocs()
            t0 = time.perf_counter()
            for i in range(a.warmup + k * a.steps, a.warmup + (k + 1) * a.steps):
                losses.append(step(model, opt, xs[i], cfg["vocab"]))
            torch.cuda.synchronize()
            r = a.steps / (time.perf_counter() - t0)
            counted[0] += a.steps
            counted[1] += allocs() - n0
            return r

        def info():
            used = lockstep.proc_used()
            d = {"losses": "%d:%s" % (len(losses), hashlib.sha1(
                 b"".join(float(v).hex().encode() for v in losses)).hexdigest()[:12]),
                 "allocs_per_step": "%.1f" % (counted[1] / max(counted[0], 1)),
                 "nvml_peak_MiB": "-" if used is None or ctx is None else (used - ctx) >> 20}
            if nxq is None or pool_route(nxq):
                d["reserved_peak_MiB"] = torch.cuda.max_memory_reserved() >> 20
            if nxq is not None:
                d["arena_peak_MiB"] = nxq.stats()["peak_charged"] >> 20
            return d

        lockstep.serve(name, window, info)
        del model, opt, xs, losses
        give_back(nxq)
    lockstep.done()


def serve_pairs(a, lockstep, allocs):
    """Workload "pairs" of mode serve: the route's own cost, apart from any
    model.  A window is 20,000 tensors made and dropped at once (sizes 512
    B to 8 MiB in turn, as a training step's mix), no kernel between them:
    pairs/s.  PyTorch's caching allocator (native, expandable) answers from
    its cache; the tensor route calls libnxquota through
    CUDAPluggableAllocator for each."""
    sizes = [512, 4096, 65536, 1 << 20, 8 << 20]
    n = 20000
    # each size's memory in hand before timing
    keep = [torch.empty(s, dtype=torch.uint8, device="cuda") for s in sizes]
    del keep
    torch.cuda.synchronize()

    def window(k):
        t0 = time.perf_counter()
        for i in range(n):
            x = torch.empty(sizes[i % 5], dtype=torch.uint8, device="cuda")
            del x
        torch.cuda.synchronize()
        return n / (time.perf_counter() - t0)

    n0 = allocs()
    lockstep.serve("pairs", window, lambda: {"allocs": allocs() - n0})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["train", "oom", "release", "bench", "serve"])
    ap.add_argument("--alloc", choices=["native", "nxq"], required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", default="small", choices=sorted(MODELS) + sorted(DECODERS))
    ap.add_argument("--models", default="small")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--logits")
    ap.add_argument("--release-at", type=int, default=-1)
    ap.add_argument("--release-thread", action="store_true")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--windows", type=int, default=5)
    a = ap.parse_args()
    if a.mode == "release":
        a.release_thread = True
    rep = {"mode": a.mode, "alloc": a.alloc, "torch": torch.__version__,
           "env": {k: v for k, v in os.environ.items()
                   if k.startswith("NXQ_") or k == "PYTORCH_CUDA_ALLOC_CONF"}}
    t0 = time.time()
    nxq = setup(a.alloc)
    if nxq is not None:
        rep["entry"] = nxq.installed()
        rep["config"] = nxq.config()
        rep["route"] = nxq.route()
    try:
        if a.mode in ("train", "release"):
            mode_train(a, nxq, rep)
        elif a.mode == "oom":
            mode_oom(a, nxq, rep)
        elif a.mode == "serve":
            mode_serve(a, nxq, rep)
        else:
            mode_bench(a, nxq, rep)
        rep["ok"] = True
    except Exception as e:
        import traceback
        rep["ok"] = False
        rep["error"] = traceback.format_exc()[-3000:]
    rep["seconds"] = time.time() - t0
    with open(a.out, "w") as f:
        json.dump(rep, f, indent=1, default=str)
    print(json.dumps({k: rep[k] for k in ("mode", "alloc", "ok", "seconds")}))
    sys.stdout.flush()
    # A normal exit: PyTorch frees its last tensors during teardown, through us.
    sys.exit(0 if rep["ok"] else 1)


if __name__ == "__main__":
    main()
