# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""bench/lockstep.py without a GPU: stand-in workers that sleep a known
time per window.  Checks that the ratios come out as the sleeps say, that
every round runs each process once in an order that turns (each process
first and last equally often, for two processes too), that two processes
of one configuration are averaged, that infos and several workloads pass
through, and that a worker that dies or disagrees stops the run with its
name instead of hanging.
"""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "bench"))
import lockstep  # noqa: E402

WORKER = r'''
import os, sys, time
sys.path.insert(0, sys.argv[1])
import lockstep
name, ms, trace = sys.argv[2], float(sys.argv[3]), sys.argv[4]
wls = sys.argv[5].split(",")
die = os.environ.get("DIE_AT")
for wl in wls:
    def window(k):
        if die is not None and k == int(die):
            os._exit(3)
        with open(trace, "a") as f:
            f.write("%s %s %d\n" % (wl, name, k))
        time.sleep(ms / 1000)
        return 1000.0 / ms
    lockstep.serve(wl, window, lambda: {"ms": ms, "wl": wl})
lockstep.done()
'''

failed = 0


def check(ok, what):
    global failed
    print("%s %s" % ("ok  " if ok else "FAIL", what))
    if not ok:
        failed += 1


def workers(tmp, spec, wls="a", env=""):
    w = os.path.join(tmp, "w.py")
    with open(w, "w") as f:
        f.write(WORKER)
    trace = os.path.join(tmp, "trace")
    open(trace, "w").close()
    bench = os.path.join(HERE, "..", "..", "..", "bench")
    return [(n, "%s%s %s %s %s %s %s %s" % (env, sys.executable, w, bench, n, ms, trace, wls))
            for n, ms in spec], trace


def main():
    tmp = tempfile.mkdtemp(prefix="lockstep_")
    log = open(os.path.join(tmp, "log"), "w")

    # two configurations: b sleeps 1.25x a's time, so it runs at 0.8x
    ws, trace = workers(tmp, [("a", 20), ("b", 25)], "x,y")
    res = lockstep.run(ws, 8, ["a"], log)
    check(list(res) == ["x", "y"], "two workloads in the order the workers gave: %s" % list(res))
    xb = res["x"]["configs"]["b"]["x"]["a"]["median"]
    check(0.7 < xb < 0.9, "b at 0.8x a (sleeps 20 and 25 ms): %.3f" % xb)
    check(abs(res["x"]["configs"]["a"]["x"]["a"]["median"] - 1) < 1e-9, "a is 1.000x itself")
    check(res["y"]["infos"]["b"].get("ms") == "25.0" and res["y"]["infos"]["a"].get("wl") == "y",
          "infos come back per worker: %s" % res["y"]["infos"])
    rows = [ln.split() for ln in open(trace)]
    xs = [r for r in rows if r[0] == "x"]
    check(len(xs) == 16 and all(sum(1 for r in xs if r[1] == n and r[2] == str(k)) == 1
                                for n in "ab" for k in range(8)),
          "every round runs each process once (%d windows)" % len(xs))
    firsts = [xs[2 * k][1] for k in range(8)]
    check(firsts.count("a") == 4 and firsts.count("b") == 4,
          "with two processes each goes first in half the rounds: %s" % "".join(firsts))
    orders = ["".join(lockstep.order_of(list("abcde"), r)) for r in range(10)]
    check(all(sorted(o) == list("abcde") for o in orders)
          and all(sum(o[0] == n for o in orders) == 2 for n in "abcde")
          and all(sum(o[-1] == n for o in orders) == 2 for n in "abcde"),
          "five processes: each first twice and last twice in 10 rounds: %s" % " ".join(orders))

    # two processes of one configuration are averaged per round
    ws, _ = workers(tmp, [("a", 20), ("c#1", 10), ("c#2", 30)])
    res = lockstep.run(ws, 4, ["a"], log)
    c = res["a"]["configs"]["c"]
    check(c["procs"] == ["c#1", "c#2"] and 1.2 < c["x"]["a"]["median"] < 1.45,
          "c#1 at 100/s and c#2 at 33/s average to 67/s, 1.33x a's 50/s: %.3f"
          % c["x"]["a"]["median"])

    # a worker that dies in round 2 stops the run, named
    ws, _ = workers(tmp, [("a", 5), ("b", 5)], env="DIE_AT=2 ")
    try:
        lockstep.run(ws, 4, ["a"], log, timeout_s=30)
        check(False, "a dying worker stops the run")
    except RuntimeError as e:
        check("exited" in str(e) and ("a" in str(e) or "b" in str(e)),
              "a dying worker stops the run: %s" % e)

    # workers that disagree on the workload
    ws1, _ = workers(tmp, [("a", 5)], "x")
    ws2, _ = workers(tmp, [("b", 5)], "y")
    try:
        lockstep.run(ws1 + ws2, 2, ["a"], log, timeout_s=30)
        check(False, "workers on different workloads are refused")
    except RuntimeError as e:
        check("disagree" in str(e), "workers on different workloads are refused: %s" % e)

    lockstep.report(res, open(os.devnull, "w"))
    print("test_lockstep_host: %s" % ("%d failed" % failed if failed else "all passed"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
