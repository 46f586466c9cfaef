# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""GPU tests of PyTorch on libnxquota (make -C integrations/pytorch check-gpu).

Prints "skipped: ..." and exits 0 without PyTorch or a CUDA device.
Otherwise runs torch_worker.py processes (an allocator is chosen before CUDA
starts, so one process per allocator) and compares their reports:

 1. the same seed, model and data trained for STEPS steps and run for
    inference with PyTorch's caching allocator and with libnxquota: the
    per-step losses and the logits agree to floating-point tolerance;
 2. every allocation went through libnxquota: at every checkpoint the
    live bytes as PyTorch requested them, the live allocation count and the
    cumulative allocation count equal the caching allocator's
    requested_bytes / allocation.current / allocation.allocated; the arena's
    in_use equals those sizes rounded to its 256-byte quantum; its alloc and
    free counters equal the calls PyTorch made; every parameter, gradient and
    optimizer-state tensor lies in the address range the arena handed out;
 3. a process-local cap too small for the run: PyTorch raises
    torch.cuda.OutOfMemoryError (no crash, no hang: the process exits 0
    within its timeout), the arena is consistent and under the cap, and a
    smaller allocation and a smaller training run succeed afterwards;
 4. a thread releasing idle memory all through training and one release
    from the training thread: memory goes back to the device (cuMemGetInfo),
    the arena keeps nothing idle or retained right after, and the losses are
    the caching allocator's.
Tests 1-4 run the tensor route (NXQ_TORCH_ROUTE=tensor).  The pool route
(torch.cuda.MemPool on libnxquota, PyTorch's caching allocator in front):
 5. the same training: losses and logits bitwise equal to the caching
    allocator's; PyTorch's bookkeeping equals the native run's at every
    checkpoint, and every segment PyTorch holds is one libnxquota handed out
    (segment count, reserved bytes, segment allocations and frees equal the
    integration's live count, live bytes, mallocs and frees): nothing went
    to PyTorch's default pool, backward's thread included;
 6. the variable-shape decoder (decoder-tiny): losses bitwise equal;
 7. a release (what a ticket does, on a thread of the C library's) mid-
    training: the pool is retired, PyTorch's cached segments come back
    (reserved bytes fall to what is live), the device's free memory grows
    by what was returned, and training goes on with the same losses; a
    thread releasing every 5 ms meanwhile, no error;
 8. a cap too small: torch.OutOfMemoryError, the process survives, the
    arena is consistent and under the cap, smaller work runs afterwards.

Ends with "N passed, N failed"; exit 1 if any failed.  NXQ_TORCH_RESULTS=DIR
keeps the workers' JSON reports there.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
WORKER = os.path.join(HERE, "torch_worker.py")
STEPS = int(os.environ.get("NXQ_TORCH_TEST_STEPS", "8"))
RTOL = 1e-5
MiB = 1 << 20

passed = failed = 0


def check(cond, msg):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
    print(("ok   " if cond else "FAIL ") + msg)
    sys.stdout.flush()


def info(msg):
    print("info " + msg)
    sys.stdout.flush()


def skip_reason():
    try:
        import torch
    except Exception as e:
        return "no PyTorch (%s)" % e
    if not hasattr(torch.cuda.memory, "CUDAPluggableAllocator"):
        return "this PyTorch has no CUDAPluggableAllocator"
    try:
        if not torch.cuda.is_available():
            return "no GPU (torch.cuda.is_available() is False)"
    except Exception as e:
        return "no GPU (%s)" % e
    if not os.path.exists(os.path.join(TOP, "build", "libnxq_torch.so")):
        return "build/libnxq_torch.so is not built (make -C integrations/pytorch)"
    return None


def run(tmp, name, args, env_extra=None, timeout=300, route="tensor"):
    """Run a worker; returns (report or None, returncode, timed_out, tail)."""
    out = os.path.join(tmp, name + ".json")
    env = dict(os.environ)
    env.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    env["NXQ_TORCH_ROUTE"] = route
    env.update(env_extra or {})
    cmd = [sys.executable, WORKER] + args + ["--out", out]
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout)
        rc, to, tail = p.returncode, False, p.stdout.decode(errors="replace")[-1500:]
    except subprocess.TimeoutExpired as e:
        rc, to, tail = None, True, (e.output or b"").decode(errors="replace")[-1500:]
    rep = None
    if os.path.exists(out):
        with open(out) as f:
            rep = json.load(f)
    if rep is None or not rep.get("ok") or rc != 0:
        print("---- %s: rc=%s timed_out=%s\n%s\n%s----" % (
            name, rc, to, tail, (rep or {}).get("error", "")))
    return rep, rc, to, tail


def maxdiff(a, b):
    return max((abs(x - y) for x, y in zip(a, b)), default=float("inf"))


def close(a, b):
    return len(a) == len(b) and all(
        math.isfinite(x) and abs(x - y) <= RTOL * max(abs(x), abs(y), 1e-12)
        for x, y in zip(a, b))


def sane(s, cap=None):
    ok = (s["mapped"] == s["in_use"] + s["pending"] + s["free"]
          and s["charged"] == s["mapped"] + s["retained"]
          and s["live_rounded"] == s["in_use"]
          and s["mallocs"] == s["arena_allocs"] and s["frees"] == s["arena_frees"])
    return ok and (cap is None or s["charged"] <= cap)


def fmt(s, keys=("in_use", "pending", "free", "idle", "mapped", "retained", "charged",
                 "live_count")):
    return ", ".join("%s %s" % (k, s[k]) for k in keys)


def main():
    reason = skip_reason()
    if reason:
        print("skipped: " + reason)
        return 0
    import torch
    keep = os.environ.get("NXQ_TORCH_RESULTS")
    tmp = keep or tempfile.mkdtemp(prefix="nxq_torch_")
    os.makedirs(tmp, exist_ok=True)
    info("torch %s, %d steps, model 'small' of tests/torch_worker.py" % (torch.__version__,
                                                                         STEPS))

    # 1 and 2: the same training with both allocators.
    nlog, xlog = os.path.join(tmp, "native.pt"), os.path.join(tmp, "nxq.pt")
    n, nrc, _, _ = run(tmp, "train_native", ["train", "--alloc", "native", "--steps", str(STEPS),
                                             "--logits", nlog])
    x, xrc, _, _ = run(tmp, "train_nxq", ["train", "--alloc", "nxq", "--steps", str(STEPS),
                                          "--logits", xlog])
    check(n is not None and n.get("ok") and nrc == 0, "native run: %d steps and inference"
          % STEPS)
    check(x is not None and x.get("ok") and xrc == 0,
          "libnxquota run: %d steps and inference, clean exit (rc %s)" % (STEPS, xrc))
    if not (n and x and n.get("ok") and x.get("ok")):
        print("%d passed, %d failed" % (passed, failed + 1))
        return 1
    info("libnxquota entry point %s; %s" % (x["entry"], x["config"]))
    nl, xl = n["losses"], x["losses"]
    check(close(nl, xl), "losses agree (rtol %g): max |diff| %.3g over %d steps, bitwise %s; "
          "native %s" % (RTOL, maxdiff(nl, xl), len(xl), nl == xl,
                         " ".join("%.5f" % v for v in nl)))
    ln, lx = torch.load(nlog), torch.load(xlog)
    d = float((ln - lx).abs().max())
    check(d <= 1e-4 * max(1.0, float(ln.abs().max())),
          "inference logits agree: max |diff| %.3g over %d values" % (d, ln.numel()))

    bad = []
    for (cn, bn), (cx, bx) in zip(n["checkpoints"], x["checkpoints"]):
        if cn != cx or bn["requested"] != bx["requested"] or bn["count"] != bx["count"] \
                or bn["allocs"] != bx["allocs"]:
            bad.append((cn, bn, bx))
    check(not bad and len(n["checkpoints"]) == len(x["checkpoints"]),
          "bookkeeping equals the caching allocator's at all %d checkpoints "
          "(live requested bytes, live count, cumulative allocations)%s"
          % (len(x["checkpoints"]), "" if not bad else ": first mismatch %r" % (bad[0],)))
    last_n, last_x = n["checkpoints"][-1][1], x["checkpoints"][-1][1]
    info("after inference: caching allocator requested %d B in %d blocks (allocated, "
         "512-rounded: %d B; %d allocations in all); libnxquota requested %d B, arena "
         "in_use %d B (256-rounded), %d allocations"
         % (last_n["requested"], last_n["count"], last_n["allocated"], last_n["allocs"],
            last_x["requested"], last_x["in_use"], last_x["allocs"]))
    rnd = all(b["in_use"] == b["rounded"] and b["requested"] <= b["in_use"]
              <= b["requested"] + 255 * b["count"] for _, b in x["checkpoints"])
    calls = all(b["allocs"] == b["arena_allocs"] and b["frees"] == b["arena_frees"]
                for _, b in x["checkpoints"])
    check(rnd, "arena in_use == live sizes rounded to 256 B at every checkpoint")
    check(calls, "arena allocs/frees == PyTorch's malloc/free calls at every checkpoint")
    s = x["stats"]
    check(sane(s) and s["failed_mallocs"] == 0 and s["free_errors"] == 0,
          "arena consistent at the end: " + fmt(s))
    check(x["tensors_checked"] > 0 and x["tensors_outside_arena"] == 0,
          "all %d parameter/gradient/optimizer tensors lie in the arena's range"
          % x["tensors_checked"])
    info("live parameter/gradient/optimizer bytes %d of %d live requested (the rest: "
         "cuBLAS workspaces, the last loss)" % (x["live_tensor_bytes"], last_x["requested"]))
    info("torch.cuda.memory_allocated() under the pluggable allocator: %s"
         % x["memory_allocated"])

    # 3: a cap too small for the run.
    cap = max(64 * MiB, int(0.6 * s["peak_charged"]) // (2 * MiB) * (2 * MiB))
    env = {"NXQ_TORCH_CONTEXT": "unmanaged", "NXQ_TORCH_CAP": str(cap)}
    o, orc, oto, _ = run(tmp, "oom", ["oom", "--alloc", "nxq", "--steps", str(STEPS)],
                         env, timeout=240)
    check(not oto and orc == 0 and o is not None and o.get("ok"),
          "cap %d MiB (60%% of the run's peak charge %d MiB): no crash, no hang (rc %s, "
          "timed out %s)" % (cap // MiB, s["peak_charged"] // MiB, orc, oto))
    if o and o.get("ok"):
        check(o["is_oom"], "raised %s after %d steps: %s" % (o["raised"], o["steps_done"],
                                                            o["message"].splitlines()[0]
                                                            if o["message"] else "nothing"))
        check(o["after_oom_consistent"] and sane(o["after_oom"], cap)
              and o["after_oom"]["failed_mallocs"] >= 1,
              "arena consistent and under the cap after the refusal: " + fmt(o["after_oom"]))
        c = o["after_cleanup"]
        check(sane(c, cap) and c["live_count"] < 16,
              "after dropping the model: %d allocations live (PyTorch's own), %s"
              % (c["live_count"], fmt(c)))
        check(o["small_alloc_ok"], "a smaller allocation (8 MiB) afterwards works")
        check(all(math.isfinite(v) for v in o["small_losses"]) and o["after_small_consistent"],
              "a smaller model trains afterwards under the same cap: losses %s"
              % " ".join("%.4f" % v for v in o["small_losses"]))
        info("libnxquota's reason: " + o["last_error"])

    # 3b (information): what PyTorch does when the plain C entry point returns NULL.
    if x["entry"] != "nxq_torch_malloc":
        env2 = dict(env, NXQ_TORCH_TEST_PLAIN="1")
        p, prc, pto, tail = run(tmp, "oom_plain", ["oom", "--alloc", "nxq", "--steps",
                                                   str(STEPS)], env2, timeout=120)
        info("plain C entry point returning NULL: rc %s, timed out %s, raised %s: %s" % (
            prc, pto, p and p.get("raised"),
            ((p or {}).get("message") or (p or {}).get("error") or tail or "")[-300:]
            .replace("\n", " | ")))

    # 4: release while training.
    r, rrc, _, _ = run(tmp, "release", ["release", "--alloc", "nxq", "--steps", str(STEPS),
                                        "--release-at", str(STEPS // 2)])
    check(r is not None and r.get("ok") and rrc == 0, "training with a releasing thread")
    if r and r.get("ok"):
        check(close(nl, r["losses"]), "losses with releases equal the caching allocator's: "
              "max |diff| %.3g, bitwise %s" % (maxdiff(nl, r["losses"]), nl == r["losses"]))
        rel = r["release"]
        b, a = rel["before"], rel["after"]
        check(rel["returned"] > 0 and a["idle"] == 0 and a["retained"] == 0
              and a["charged"] <= b["charged"] - rel["returned"] and sane(a)
              and a["free_errors"] == 0,
              "release at step %d: %d MiB returned; before: %s; after: %s"
              % (STEPS // 2, rel["returned"] // MiB, fmt(b), fmt(a)))
        check(rel["device_free_gain"] >= 0.9 * rel["returned"],
              "the device's free memory grew by %d MiB (cuMemGetInfo)"
              % (rel["device_free_gain"] // MiB))
        t = r["release_thread"]
        check(t["calls"] > 0 and t["errors"] == 0,
              "releasing thread: %d calls, %d MiB released, no error"
              % (t["calls"], t["bytes"] // MiB))
        check(sane(r["stats"]), "arena consistent at the end: " + fmt(r["stats"]))

    pool_tests(tmp, n, nl, ln)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


def seg_ok(b):
    """Pool route, one checkpoint: PyTorch's segments are exactly libnxquota's."""
    return (b["segments"] == b["nxq_live"] and b["reserved"] == b["nxq_requested"]
            and b["seg_allocs"] == b["nxq_mallocs"] and b["seg_frees"] == b["nxq_frees"]
            and b["in_use"] == b["rounded"])


def pool_tests(tmp, n, nl, ln):
    import torch
    # 5: the same training through the pool.
    plog = os.path.join(tmp, "pool.pt")
    x, xrc, _, _ = run(tmp, "pool_train", ["train", "--alloc", "nxq", "--steps", str(STEPS),
                                           "--logits", plog], route="pool")
    check(x is not None and x.get("ok") and xrc == 0 and x.get("route") == "pool",
          "pool route: %d steps and inference, clean exit (rc %s)" % (STEPS, xrc))
    if x and x.get("ok"):
        info("pool route: %s" % x["config"])
        check(x["losses"] == nl, "pool route: losses bitwise equal to the caching allocator's "
              "(max |diff| %.3g)" % maxdiff(nl, x["losses"]))
        lp = torch.load(plog)
        check(torch.equal(ln, lp), "pool route: inference logits bitwise equal (max |diff| %.3g)"
              % float((ln - lp).abs().max()))
        bad = [c for (c, bn), (_, bx) in zip(n["checkpoints"], x["checkpoints"])
               if (bn["requested"], bn["count"], bn["allocs"]) !=
               (bx["requested"], bx["count"], bx["allocs"])]
        check(not bad and len(n["checkpoints"]) == len(x["checkpoints"]),
              "pool route: PyTorch's bookkeeping equals the native run's at all %d checkpoints%s"
              % (len(x["checkpoints"]), "" if not bad else " (first mismatch at %s)" % bad[0]))
        segs = [c for c, b in x["checkpoints"] if not seg_ok(b)]
        last = x["checkpoints"][-1][1]
        check(not segs, "pool route: every segment PyTorch holds came from libnxquota, at every "
              "checkpoint (after inference: %d segments, %d MiB reserved, %d segment "
              "allocations)%s" % (last["segments"], last["reserved"] // MiB, last["seg_allocs"],
                                  "" if not segs else "; mismatch at " + ", ".join(segs)))
        s = x["stats"]
        check(sane(s) and s["failed_mallocs"] == 0 and s["free_errors"] == 0 and s["route"] == 1,
              "pool route: arena consistent at the end: " + fmt(s))
        check(x["tensors_checked"] > 0 and x["tensors_outside_arena"] == 0,
              "pool route: all %d parameter/gradient/optimizer tensors lie in the arena's range"
              % x["tensors_checked"])

    # 6: the variable-shape decoder.
    dn, _, _, _ = run(tmp, "dec_native", ["train", "--alloc", "native", "--model", "decoder-tiny",
                                          "--steps", str(2 * STEPS)])
    dp, dprc, _, _ = run(tmp, "dec_pool", ["train", "--alloc", "nxq", "--model", "decoder-tiny",
                                           "--steps", str(2 * STEPS)], route="pool")
    check(dn and dn.get("ok") and dp and dp.get("ok") and dprc == 0
          and dn["losses"] == dp["losses"] and all(seg_ok(b) for _, b in dp["checkpoints"]),
          "pool route, variable-shape decoder (decoder-tiny, %d steps): losses bitwise equal, "
          "segments all from libnxquota" % (2 * STEPS))

    # 7: a release mid-training, and a thread releasing all along.
    r, rrc, _, _ = run(tmp, "pool_release", ["release", "--alloc", "nxq", "--steps", str(STEPS),
                                             "--release-at", str(STEPS // 2)], route="pool")
    check(r is not None and r.get("ok") and rrc == 0, "pool route: training with a releasing thread")
    if r and r.get("ok"):
        check(r["losses"] == nl, "pool route: losses with releases bitwise equal to the caching "
              "allocator's (max |diff| %.3g)" % maxdiff(nl, r["losses"]))
        rel = r["release"]
        b, a = rel["before"], rel["after"]
        tb, ta = rel["torch_before"], rel["torch_after"]
        check(rel["pool_after"]["rotations"] == rel["pool_before"]["rotations"] + 1
              and rel["pool_after"]["live"] != rel["pool_before"]["live"],
              "release at step %d: the pool was retired (%d -> %d rotations), a new one routed"
              % (STEPS // 2, rel["pool_before"]["rotations"], rel["pool_after"]["rotations"]))
        check(ta["reserved_bytes.all.current"] < tb["reserved_bytes.all.current"]
              and ta["num_device_free"] > tb["num_device_free"]
              and a["frees"] - b["frees"] == ta["num_device_free"] - tb["num_device_free"]
              and ta["reserved_bytes.all.current"] == a["live_requested"],
              "PyTorch handed %d cached segments back (%d MiB reserved -> %d MiB, all of it "
              "libnxquota's live bytes)" % (ta["num_device_free"] - tb["num_device_free"],
                                            tb["reserved_bytes.all.current"] // MiB,
                                            ta["reserved_bytes.all.current"] // MiB))
        check(rel["returned"] > 0 and a["idle"] == 0 and a["retained"] == 0 and a["pending"] == 0
              and a["charged"] <= b["charged"] - rel["returned"] and sane(a)
              and a["free_errors"] == 0,
              "%d MiB returned to the device; before: %s; after: %s"
              % (rel["returned"] // MiB, fmt(b), fmt(a)))
        check(rel["device_free_gain"] >= 0.9 * rel["returned"],
              "the device's free memory grew by %d MiB (cuMemGetInfo)"
              % (rel["device_free_gain"] // MiB))
        t = r["release_thread"]
        s = r["stats"]
        check(t["calls"] > 0 and t["errors"] == 0 and s["hook_errors"] == 0
              and s["hook_calls"] >= t["calls"],
              "releasing thread: %d calls (half from C threads), %d hook calls, %d MiB released, "
              "no error" % (t["calls"], s["hook_calls"], t["bytes"] // MiB))
        check(sane(s) and s["free_errors"] == 0 and s["failed_mallocs"] == 0,
              "pool route: arena consistent at the end, no refused free: " + fmt(s))

    # 8: a cap too small.
    peak = (x or {}).get("stats", {}).get("peak_charged", 0)
    cap = max(64 * MiB, int(0.6 * peak) // (2 * MiB) * (2 * MiB))
    env = {"NXQ_TORCH_CONTEXT": "unmanaged", "NXQ_TORCH_CAP": str(cap)}
    o, orc, oto, _ = run(tmp, "pool_oom", ["oom", "--alloc", "nxq", "--steps", str(STEPS)],
                         env, timeout=240, route="pool")
    check(not oto and orc == 0 and o is not None and o.get("ok"),
          "pool route, cap %d MiB (60%% of the run's peak charge): no crash, no hang (rc %s)"
          % (cap // MiB, orc))
    if o and o.get("ok"):
        check(o["is_oom"], "pool route: raised %s after %d steps: %s" % (
            o["raised"], o["steps_done"], (o["message"] or "nothing").splitlines()[0][:160]))
        check(o["after_oom_consistent"] and sane(o["after_oom"], cap)
              and o["after_oom"]["failed_mallocs"] >= 1,
              "pool route: arena consistent and under the cap after the refusal: "
              + fmt(o["after_oom"]))
        c = o["after_cleanup"]
        check(sane(c, cap) and c["live_count"] < 16,
              "pool route: model dropped and released: %d segments live, %s"
              % (c["live_count"], fmt(c)))
        check(o["small_alloc_ok"] and all(math.isfinite(v) for v in o["small_losses"])
              and o["after_small_consistent"],
              "pool route: an 8 MiB tensor and a smaller model's training work afterwards")
        info("pool route: libnxquota's reason: " + o["last_error"])


if __name__ == "__main__":
    sys.exit(main())
