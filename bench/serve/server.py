# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""One tenant of the serving benchmark: a server process (serve.py starts
4-8 of them, each in its own cgroup).

    server.py --tenant NAME --load load.json --out DIR --engine real|mock
              --alloc native|nxq|shim [--fraction F] [--min BYTES] ...

Protocol on stdin/stdout: the server prints "SV ready ..." once its model
is on the device, waits for "go T0_NS" (CLOCK_MONOTONIC nanoseconds of the
load's time 0, the same for every tenant), serves its requests of the load
in arrival order, and at the end writes DIR/NAME.json (every request's
times, the refusals, the ticket events) and DIR/NAME.csv (its memory every
sample_ms), prints "SV done" and exits.

Engines:
  real  the Llama-shaped model of llm.py on the GPU, KV cache one tensor
        per request (llm.Llama.new_cache), allocated at admission, dropped
        at the end
  mock  no GPU and no PyTorch: KV caches are allocations of
        libnxq_torch.so's nxq_torch_malloc (the fake CUDA driver under
        make check), "compute" is a sleep per step: it checks the harness
        and the accounting, not speed

Allocators (--alloc):
  native  PyTorch's caching allocator (expandable segments, as serve.py
          sets them), capped by torch.cuda.set_per_process_memory_fraction
          (--fraction): regime A; the mock uses an unmanaged nxq_torch arena
          with a process-local cap (NXQ_TORCH_CAP) for the same role
  nxq     nxquota's PyTorch integration (integrations/pytorch, the tensor
          route by default; NXQ_TORCH_ROUTE=pool for the MemPool one):
          regimes B and C
  shim    PyTorch unmodified under LD_PRELOAD=libnxquota-preload.so (set
          by serve.py): regime C for a program that never heard of nxquota

Scheduling (every allocator alike): arrived requests are admitted in
arrival order.  An allocator thread gets the head request's KV cache
while the serving loop goes on (under C an allocation may wait up to
NXQ_TORCH_GROW_TIMEOUT_MS for nxquotad's grant; the loop waits for it only
--admit-wait-ms); the request is then prefilled and runs.  A refused
allocation, of its cache or of its prefill's activations (the
allocator's out-of-memory error), leaves the request queued and is
counted as a refusal: inside the guarantee if the tenant's charge plus
the request's cache was within --min when it was asked for, else a
borrowing refused.  After a refusal outside the guarantee, admission
backs off --backoff-ms unless a request of its own finished.  Each loop:
admissions (up to --prefill-tokens of prefill), then one decode step of
every running request.

Preemption (nxq, managed): a RECALL ticket (a guarantee called back) asks
this server, through the integration's release hook, for memory it may be
using; the hook hands the request to the serving loop, which at its next
step preempts the newest requests until the bytes asked are freed or its
charge is down to its own --min (it never gives up its guarantee); they
go back to the head of the queue and are prefilled again (recompute) when
memory allows.  An ASK ticket (another borrower) is answered from idle
memory only, by the library.
"""
import argparse
import ctypes
import json
import os
import queue
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))


def mono():
    return time.monotonic_ns()


class OOM(Exception):
    pass


# ----------------------------------------------------------------- engines

class NxqEvents:
    """Events, the current ticket and the release hook of libnxq_torch,
    through ctypes (the mock's; the real engine uses nxquota_torch's own)."""
    FIELDS = ("type", "t_ns", "generation", "bytes_wanted", "level", "reason", "released",
              "charged")

    def __init__(self, lib):
        self.lib = lib
        lib.nxq_torch_events.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_int]
        lib.nxq_torch_ticket.argtypes = [ctypes.POINTER(ctypes.c_uint64)]
        lib.nxq_torch_stats.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_uint64),
                                        ctypes.c_int]
        lib.nxq_torch_stat_name.restype = ctypes.c_char_p
        self.hook_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_uint64,
                                       ctypes.c_void_p)
        self.hook = None

    def _ev(self, w):
        d = dict(zip(self.FIELDS, (int(x) for x in w)))
        d["type"] = {1: "ticket", 2: "answer"}.get(d["type"], d["type"])
        d["level"] = {0: "ASK", 1: "RECALL"}.get(d["level"], d["level"])
        return d

    def events(self):
        n = len(self.FIELDS)
        buf = (ctypes.c_uint64 * (n * 4096))()
        got = self.lib.nxq_torch_events(buf, 4096)
        return [self._ev(buf[i * n:(i + 1) * n]) for i in range(max(got, 0))]

    def ticket(self):
        buf = (ctypes.c_uint64 * len(self.FIELDS))()
        return None if self.lib.nxq_torch_ticket(buf) < 0 else self._ev(buf)

    def set_release_hook(self, fn):
        def call(dev, nbytes, user):
            try:
                fn(dev, nbytes)
                return 0
            except Exception:
                return -5
        self.hook = self.hook_t(call)
        self.lib.nxq_torch_set_release_hook(self.hook, None)

    def stats(self):
        n = self.lib.nxq_torch_nstats()
        buf = (ctypes.c_uint64 * n)()
        r = self.lib.nxq_torch_stats(0, buf, n)
        if r < 0:
            return None
        return {self.lib.nxq_torch_stat_name(i).decode(): int(buf[i]) for i in range(r)}


class MockEngine:
    """KV caches from nxq_torch_malloc; a step costs step_ms plus
    token_us per token of prefill."""

    def __init__(self, a):
        path = os.environ.get("NXQ_TORCH_LIB") or os.path.join(
            TOP, "integrations", "pytorch", "build", "libnxq_torch.so")
        self.lib = ctypes.CDLL(path)
        self.lib.nxq_torch_malloc.restype = ctypes.c_void_p
        self.lib.nxq_torch_malloc.argtypes = [ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
        self.lib.nxq_torch_free.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                            ctypes.c_void_p]
        self.lib.nxq_torch_last_error.restype = ctypes.c_char_p
        self.lib.nxq_torch_release.argtypes = [ctypes.c_int, ctypes.c_uint64]
        self.lib.nxq_torch_release.restype = ctypes.c_int64
        r = self.lib.nxq_torch_configure()
        if r < 0:
            raise SystemExit("server: nxq_torch_configure: %s" % self.lib.nxq_torch_last_error())
        self.nxq = NxqEvents(self.lib)
        self.kv_token = a.mock_kv_token
        self.step_s = a.mock_step_ms / 1e3
        self.tok_s = a.mock_token_us / 1e6
        self.live = 0
        self.weights = None if a.probe else self._alloc(a.mock_weights)
        self.params = 0

    def _alloc(self, n):
        p = self.lib.nxq_torch_malloc(n, 0, None)
        if not p:
            raise OOM(self.lib.nxq_torch_last_error().decode(errors="replace"))
        self.live += n
        return (p, n)

    def new_cache(self, tokens):
        return self._alloc(tokens * self.kv_token)

    def alloc_bytes(self, n):
        return self._alloc(n)

    def drop(self, cache):
        p, n = cache
        self.lib.nxq_torch_free(p, n, 0, None)
        self.live -= n

    def cache_bytes(self, cache):
        return cache[1]

    def prefill(self, tokens, cache):
        time.sleep(self.step_s / 4 + tokens * self.tok_s)

    def decode(self, caches):
        time.sleep(self.step_s)

    def charged(self):
        s = self.nxq.stats()
        return s["charged"] if s else 0

    def release(self):
        return self.lib.nxq_torch_release(-1, (1 << 64) - 1)


class RealEngine:
    def __init__(self, a):
        self.nxq = None
        if a.alloc == "nxq":
            sys.path.insert(0, os.path.join(TOP, "integrations", "pytorch"))
            import nxquota_torch
            nxquota_torch.install()
            self.nxq = nxquota_torch
        import torch
        self.torch = torch
        # one CPU thread: N servers' OpenMP pools spinning on 16 cores
        # starved the serving loops (first H100 run: 10 tokens in 20 s)
        torch.set_num_threads(1)
        sys.path.insert(0, HERE)
        import llm
        torch.cuda.init()
        if a.alloc == "native" and a.fraction:
            torch.cuda.set_per_process_memory_fraction(a.fraction)
        self.kv_token, self.params = 0, 0
        if a.probe:
            torch.empty(1, device="cuda")
            return
        self.model = llm.Llama(a.shape, a.seed)
        self.params = self.model.params
        self.kv_token = llm.kv_bytes_per_token(a.shape)
        self.vocab = self.model.vocab
        self.g = torch.Generator().manual_seed(a.seed)
        # warm up: cuBLAS, SDPA kernels; then give the scratch back
        c = self.model.new_cache(300)
        first = self.model.prefill(torch.randint(self.vocab, (256,), generator=self.g), c)
        self.model.decode(first, [c], [256])
        del c, first
        torch.cuda.synchronize()
        self.release()

    def new_cache(self, tokens):
        try:
            return self.model.new_cache(tokens)
        except self.torch.OutOfMemoryError as e:
            raise OOM(str(e).splitlines()[0][:300])

    def drop(self, cache):
        pass            # the last reference goes with the request

    def alloc_bytes(self, n):
        try:
            return self.torch.empty(n, dtype=self.torch.uint8, device="cuda")
        except self.torch.OutOfMemoryError as e:
            raise OOM(str(e).splitlines()[0][:300])

    def cache_bytes(self, cache):
        return cache.numel() * cache.element_size()

    def prefill(self, tokens, cache):
        ids = self.torch.randint(self.vocab, (tokens,), generator=self.g)
        try:
            return self.model.prefill(ids, cache)
        except self.torch.OutOfMemoryError as e:
            raise OOM(str(e).splitlines()[0][:300])

    def decode(self, reqs):
        toks = self.torch.cat([r.tok for r in reqs])
        try:
            nxt = self.model.decode(toks, [r.cache for r in reqs], [r.pos for r in reqs])
        except self.torch.OutOfMemoryError as e:
            raise OOM(str(e).splitlines()[0][:300])
        for j, r in enumerate(reqs):
            r.tok = nxt[j:j + 1]
        nxt.cpu()           # the step's end: tokens on the host

    def charged(self):
        if self.nxq is not None:
            s = self.nxq.stats()
            return s["charged"] if s else 0
        return self.torch.cuda.memory_reserved()

    def release(self):
        import gc
        gc.collect()
        self.torch.cuda.synchronize()
        if self.nxq is not None:
            return self.nxq.release()
        self.torch.cuda.empty_cache()
        return 0


# ------------------------------------------------------------------ server

class Req:
    __slots__ = ("id", "arrival", "prompt", "out", "cache", "tok", "pos", "gen", "t_admit",
                 "t_first", "t_done", "preempted", "refusals", "waited_ms", "status")

    def __init__(self, q):
        self.id, self.arrival = q["id"], q["arrival"]
        self.prompt, self.out = q["prompt"], q["out"]
        self.cache = self.tok = None
        self.pos = self.gen = 0
        self.t_admit = self.t_first = self.t_done = None
        self.preempted = self.refusals = 0
        self.waited_ms = 0.0
        self.status = "queued"


class Server:
    def __init__(self, a, eng):
        self.a, self.eng = a, eng
        self.lock = threading.Lock()
        self.want = 0                   # bytes a RECALL hook asks for
        self.done_ev = threading.Event()
        self.refusals = []              # (t, bytes, charged, inside_min, message)
        self.preemptions = []           # (t, req id, bytes)
        self.hook_calls = []            # (t, level, bytes, served)
        self.samples = []
        self.events = []
        self.t0 = None
        self.running = []
        self.queue = []
        self.kv = 0
        self.hold_until = 0.0           # no borrowing until then (after a preemption)
        self.jobs = queue.Queue()
        self.results = queue.Queue()
        self.pending = None             # (request, t, inside the guarantee, bytes)
        self.waits = []                 # ms, admissions inside the guarantee that waited
        self.stop = threading.Event()

    def now(self):
        return (mono() - self.t0) / 1e9

    # -- the release hook: on libnxquota's pressure thread
    def hook(self, device, nbytes):
        t = self.eng.nxq.ticket()
        level = t["level"] if t else "none"
        if level != "RECALL" or self.t0 is None:
            self.hook_calls.append((self.now() if self.t0 else 0, level, nbytes, 0))
            return
        with self.lock:
            self.want += nbytes
            self.done_ev.clear()
        served = self.done_ev.wait(self.a.hook_wait_ms / 1e3)
        self.hook_calls.append((self.now(), level, nbytes, int(served)))

    def preempt(self):
        with self.lock:
            want, self.want = self.want, 0
        if not want:
            return
        freed = 0
        charged = self.eng.charged()
        while self.running and freed < want and charged - freed > self.a.min:
            r = self.running.pop()          # the newest
            b = self.eng.cache_bytes(r.cache)
            self.eng.drop(r.cache)
            r.cache = r.tok = None
            r.preempted += 1
            r.status = "queued"
            self.kv -= b
            freed += b
            self.preemptions.append((round(self.now(), 4), r.id, b))
            self.queue.insert(0, r)
        if freed and hasattr(self.eng, "torch"):
            self.eng.torch.cuda.synchronize()
        if freed:
            # what was freed is the asker's: no borrowing it back at once
            # (admissions within the guarantee still go on)
            self.hold_until = self.now() + self.a.backoff_ms / 1e3 * 2
        self.done_ev.set()

    # -- sampling thread: memory and events every sample_ms
    def sampler(self):
        while not self.stop.wait(self.a.sample_ms / 1e3):
            self.sample()

    def sample(self):
        try:
            ch = self.eng.charged()
        except Exception:
            ch = -1
        self.samples.append((round(self.now(), 4), self.kv, ch, len(self.running),
                             sum(1 for r in self.queue if r.arrival <= self.now())))
        if self.eng.nxq is not None:
            for e in self.eng.nxq.events():
                e["t"] = round((e.pop("t_ns") - self.t0) / 1e9, 6)
                self.events.append(e)

    # -- admissions: the allocator thread gets the head request's cache (an
    # allocation nxquota may make wait: the serving loop goes on meanwhile)
    def allocator(self):
        while True:
            job = self.jobs.get()
            if job is None:
                return
            r, tokens = job
            try:
                res = (r, self.eng.new_cache(tokens), None)
            except OOM as e:
                res = (r, None, str(e))
            self.results.put(res + (self.now(),))

    def submit(self, now, backoff_until):
        """Ask the allocator thread for the head request's cache, unless one
        is pending or borrowing is on hold.  Returns True if asked."""
        a = self.a
        if self.pending is not None or not self.queue or self.queue[0].arrival > now:
            return False
        r = self.queue[0]
        size = (r.prompt + r.out) * self.eng.kv_token
        inside = self.eng.charged() + size <= a.min
        if not inside and now < max(backoff_until, self.hold_until):
            return False
        self.pending = (r, now, inside, size)
        self.jobs.put((r, r.prompt + r.out))
        return True

    def collect(self, timeout):
        """The allocator thread's answer, if it comes within timeout:
        prefill the request (True), or count the refusal (False); None if
        no answer yet."""
        try:
            r, cache, err, t = self.results.get(timeout=timeout) if timeout else \
                self.results.get_nowait()
        except queue.Empty:
            return None
        pr, t_start, inside, size = self.pending
        assert pr is r
        self.pending = None
        r.waited_ms += (t - t_start) * 1e3
        if err is not None:
            r.refusals += 1
            self.refusals.append((round(t, 4), size, self.eng.charged(), inside, err[:200]))
            return False
        if inside and (t - t_start) > 0.001:
            self.waits.append(round((t - t_start) * 1e3, 3))
        pos = r.prompt + max(r.gen - 1, 0)     # a preempted request recomputes what it had
        try:
            tok = self.eng.prefill(pos, cache)
        except OOM as e:        # its activations refused: the request waits, as refused
            self.eng.drop(cache)
            del cache
            r.refusals += 1
            self.refusals.append((round(self.now(), 4), size, self.eng.charged(), inside,
                                  "prefill: " + str(e)[:200]))
            return False
        self.queue.remove(r)
        r.cache, r.tok, r.pos = cache, tok, pos
        self.kv += self.eng.cache_bytes(cache)
        if r.t_admit is None:
            r.t_admit = self.now()
        if r.t_first is None:
            if r.tok is not None and hasattr(r.tok, "cpu"):
                r.tok.cpu()
            r.t_first = self.now()
            r.gen = 1
        r.status = "running"
        self.running.append(r)
        return True

    def finish(self, r):
        r.t_done = self.now()
        r.status = "done"
        self.kv -= self.eng.cache_bytes(r.cache)
        self.eng.drop(r.cache)
        r.cache = r.tok = None

    def run(self, reqs):
        a = self.a
        self.queue = list(reqs)
        st = threading.Thread(target=self.sampler, daemon=True)
        st.start()
        at = threading.Thread(target=self.allocator, daemon=True)
        at.start()
        backoff_until = 0.0
        while True:
            now = self.now()
            if now > a.end_s:
                break
            self.preempt()
            if not self.queue and not self.running:
                break
            # admissions: what the allocator thread has answered, then the
            # next request (its answer awaited a moment: most come at once)
            budget = a.prefill_tokens
            while budget > 0:
                got = self.collect(0)
                if got is False:
                    backoff_until = self.now() + a.backoff_ms / 1e3
                if got:
                    budget -= self.running[-1].prompt
                    self.preempt()
                if not self.submit(self.now(), backoff_until):
                    break
                got = self.collect(a.admit_wait_ms / 1e3)
                if got is None:
                    break           # a wait: the serving loop goes on
                if got is False:
                    backoff_until = self.now() + a.backoff_ms / 1e3
                    break
                budget -= self.running[-1].prompt
                self.preempt()
            # one decode step
            if self.running:
                try:
                    self.eng.decode(self.running)
                except OOM as e:      # activations refused: back off, step again
                    self.refusals.append((round(self.now(), 4), 0, self.eng.charged(), False,
                                          "decode: " + str(e)[:200]))
                    time.sleep(a.backoff_ms / 1e3)
                    continue
                ended = False
                for r in list(self.running):
                    r.pos += 1
                    r.gen += 1
                    if r.gen >= r.out:
                        self.running.remove(r)
                        self.finish(r)
                        ended = True
                if ended:
                    backoff_until = 0.0
            else:
                nxt = self.queue[0].arrival if self.queue else a.end_s
                wait = min(max(nxt - self.now(), 0.0005), 0.02)
                if self.pending is not None:
                    got = self.collect(wait)
                    if got is False:
                        backoff_until = self.now() + a.backoff_ms / 1e3
                else:
                    time.sleep(wait)
        self.stop.set()
        self.jobs.put(None)
        st.join()
        self.sample()
        for r in self.running:
            r.status = "cut"
        for r in self.queue:
            r.status = "cut" if r.arrival <= a.end_s else "not-arrived"


def probe(a, eng):
    """--probe: hold and drop memory on command, for the recall probe of
    serve.py (an idle borrower asked to give back what a guaranteed tenant
    wants).  Commands on stdin, one answer line each on stdout:
      grow BYTES   allocate BYTES (1 GiB pieces): "SV ok T0_NS T1_NS" (the
                   call's start and end, CLOCK_MONOTONIC) or "SV oom T0 T1 MSG"
      free         drop everything held (stays mapped and charged, idle)
      fill BYTES   allocate pieces of BYTES until one is refused: "SV ok CHARGED"
      release      give idle memory back (uncharged): "SV ok BYTES"
      events       "SV events JSON" (the ticket and answer events so far)
      quit"""
    held = []
    # one allocation per 1 GiB on a GPU; the mock asks for it all at once
    # (pieces in quick succession: repro_lost_ticket.py)
    piece = a.probe_piece or (1 << 30 if a.engine == "real" else 1 << 40)
    print("SV ready probe", flush=True)
    for line in sys.stdin:
        w = line.split()
        if not w:
            continue
        if w[0] == "grow":
            n = int(w[1])
            t0 = mono()
            try:
                while n > 0:
                    k = min(n, piece)
                    held.append(eng.alloc_bytes(k))
                    n -= k
                if hasattr(eng, "torch"):
                    eng.torch.cuda.synchronize()
                print("SV ok %d %d" % (t0, mono()), flush=True)
            except OOM as e:
                print("SV oom %d %d %s" % (t0, mono(), str(e)[:200].replace("\n", " ")),
                      flush=True)
        elif w[0] == "fill":       # pieces of BYTES until refused: "SV ok HELD"
            n = int(w[1])
            while True:
                try:
                    held.append(eng.alloc_bytes(n))
                except OOM:
                    break
            if hasattr(eng, "torch"):
                eng.torch.cuda.synchronize()
            print("SV ok %d" % eng.charged(), flush=True)
        elif w[0] == "free":
            for h in held:
                eng.drop(h)
            held = []
            if hasattr(eng, "torch"):
                eng.torch.cuda.synchronize()
            print("SV ok", flush=True)
        elif w[0] == "release":
            print("SV ok %d" % eng.release(), flush=True)
        elif w[0] == "events":
            print("SV events " + json.dumps(eng.nxq.events() if eng.nxq else []), flush=True)
        elif w[0] == "quit":
            break


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tenant", required=True)
    ap.add_argument("--probe", action="store_true", help="the recall probe's holder (see probe())")
    ap.add_argument("--probe-piece", type=int, default=0, help="--probe: allocation size")
    ap.add_argument("--load")
    ap.add_argument("--out")
    ap.add_argument("--engine", choices=["real", "mock"], default="real")
    ap.add_argument("--alloc", choices=["native", "nxq", "shim"], required=True)
    ap.add_argument("--cgroup", help="a path under the cgroup2 root to move into first")
    ap.add_argument("--fraction", type=float, default=0.0)
    ap.add_argument("--min", type=int, default=0, help="this tenant's guarantee, bytes")
    ap.add_argument("--shape", default="llama-8l")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--end-s", type=float, default=0)
    ap.add_argument("--prefill-tokens", type=int, default=8192)
    ap.add_argument("--admit-wait-ms", type=float, default=2,
                    help="how long the loop waits for an allocation before it decodes")
    ap.add_argument("--backoff-ms", type=float, default=100)
    ap.add_argument("--hook-wait-ms", type=float, default=500)
    ap.add_argument("--sample-ms", type=float, default=50)
    ap.add_argument("--mock-kv-token", type=int, default=64 << 10)
    ap.add_argument("--mock-weights", type=int, default=64 << 20)
    ap.add_argument("--mock-step-ms", type=float, default=4)
    ap.add_argument("--mock-token-us", type=float, default=2)
    a = ap.parse_args()
    try:        # go with the coordinator (PR_SET_PDEATHSIG, SIGKILL)
        ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if a.cgroup:
        mnt = None
        with open("/proc/self/mountinfo") as f:
            for line in f:
                if " - cgroup2 " in line:
                    mnt = line.split()[4]
                    break
        if mnt is None:
            raise SystemExit("server: no cgroup2 mount")
        with open(os.path.join(mnt + a.cgroup, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    if a.probe:
        eng = MockEngine(a) if a.engine == "mock" else RealEngine(a)
        probe(a, eng)
        return
    if not a.load or not a.out or not a.end_s:
        raise SystemExit("server: --load, --out and --end-s are needed (or --probe)")
    with open(a.load) as f:
        load = json.load(f)
    reqs = [Req(q) for q in load["requests"] if q["tenant"] == a.tenant]
    t_start = time.time()
    eng = MockEngine(a) if a.engine == "mock" else RealEngine(a)
    srv = Server(a, eng)
    if eng.nxq is not None:
        eng.nxq.set_release_hook(srv.hook)
    charged0 = eng.charged()
    print("SV ready %s requests=%d params=%d charged=%d setup_s=%.1f" % (
        a.tenant, len(reqs), eng.params, charged0, time.time() - t_start), flush=True)
    line = sys.stdin.readline().split()
    if len(line) != 2 or line[0] != "go":
        raise SystemExit("server: expected 'go T0_NS', got %r" % line)
    srv.t0 = int(line[1])
    while mono() < srv.t0:
        time.sleep(0.001)
    err = None
    try:
        srv.run(reqs)
    except Exception:
        import traceback
        err = traceback.format_exc()[-3000:]
    rep = {"tenant": a.tenant, "alloc": a.alloc, "engine": a.engine, "min": a.min,
           "fraction": a.fraction, "kv_token": eng.kv_token, "params": eng.params,
           "charged_at_ready": charged0, "error": err,
           "env": {k: v for k, v in os.environ.items()
                   if k.startswith("NXQ") or k in ("PYTORCH_CUDA_ALLOC_CONF", "LD_PRELOAD")},
           "requests": [{"id": r.id, "arrival": r.arrival, "prompt": r.prompt, "out": r.out,
                         "t_admit": r.t_admit, "t_first": r.t_first, "t_done": r.t_done,
                         "gen": r.gen, "preempted": r.preempted, "refusals": r.refusals,
                         "waited_ms": round(r.waited_ms, 3), "status": r.status}
                        for r in reqs],
           "refusals": srv.refusals, "preemptions": srv.preemptions,
           "guarantee_waits_ms": srv.waits, "hook_calls": srv.hook_calls, "events": srv.events, "samples": srv.samples}
    if eng.nxq is not None:
        rep["stats"] = eng.nxq.stats()
    with open(os.path.join(a.out, a.tenant + ".json"), "w") as f:
        json.dump(rep, f)
    with open(os.path.join(a.out, a.tenant + ".csv"), "w") as f:
        f.write("t_s,kv_bytes,charged_bytes,running,waiting\n")
        for s in srv.samples:
            f.write("%s,%d,%d,%d,%d\n" % s)
    print("SV done %s%s" % (a.tenant, " ERROR" if err else ""), flush=True)
    if err:
        sys.stderr.write(err)
    sys.exit(1 if err else 0)


if __name__ == "__main__":
    main()
