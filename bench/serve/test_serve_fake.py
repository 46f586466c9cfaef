# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""The serving benchmark's harness and accounting on the fake CUDA driver
(make -C bench/serve check; make check runs it from integrations/pytorch's
check-host): serve.py --engine mock, regimes A, B and C, one seed, a few
seconds each, and the recall probe; then every run is checked against
what the authority and the servers recorded.  Speed is not checked.

Needs root and a cgroup2 mount (nxquotad, cgroups per tenant): says
"skipped" and why otherwise.  Prints one line per check and "N passed, N
failed"; exit 1 if any failed."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
passed = failed = 0


def check(cond, msg):
    global passed, failed
    passed += bool(cond)
    failed += not cond
    print(("ok   " if cond else "FAIL ") + msg, flush=True)


def main():
    sys.path.insert(0, HERE)
    import serve
    if os.geteuid() != 0 or serve.cgroot() is None:
        print("skipped: bench/serve/test_serve_fake.py needs root and cgroup2")
        return 0
    out = os.environ.get("OUT") or os.path.join(TOP, "build", "serve-fake")
    env = dict(os.environ, NXQ_FAKE_CUDA="1", LD_LIBRARY_PATH=os.path.join(TOP, "tests", "fakecuda"))
    cap, tenants = 1 << 30, 4
    share = cap // tenants
    cmd = [sys.executable, os.path.join(HERE, "serve.py"), "--engine", "mock", "--out", out,
           "--regimes", "A,B,C", "--seeds", "1", "--tenants", str(tenants), "--duration", "4",
           "--drain", "3", "--capacity", str(cap), "--prompt-median", "256", "--out-median", "32",
           "--out-max", "256", "--tpot-est", "0.01", "--probe-rounds", "3", "--ready-s", "60"]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    sys.stdout.write(r.stdout[-1500:])
    check(r.returncode == 0, "serve.py ran every regime and the probe (rc %d)%s" % (
        r.returncode, "" if r.returncode == 0 else ": " + r.stderr[-800:]))
    with open(os.path.join(out, "results.json")) as f:
        res = json.load(f)
    runs = {x["regime"]: x for x in res["runs"]}
    check(sorted(runs) == ["A", "B", "C"] and not any("failed" in x for x in runs.values()),
          "three runs, none failed")
    for rg, s in sorted(runs.items()):
        d = os.path.join(out, "%s-s1" % rg)
        with open(os.path.join(d, "load.json")) as f:
            ld = json.load(f)
        reps = {}
        for n in ld["tenants"]:
            with open(os.path.join(d, n + ".json")) as f:
                reps[n] = json.load(f)
        check(all(v == 0 for v in s["returncodes"].values()) and
              not any(x["error"] for x in reps.values()),
              "%s: every server exited 0 without an error" % rg)
        nreq = sum(len(x["requests"]) for x in reps.values())
        check(nreq == len(ld["requests"]) and nreq > 0,
              "%s: the servers account for every request of load.json (%d)" % (rg, nreq))
        bad = [q for x in reps.values() for q in x["requests"]
               if q["status"] == "done" and not (q["arrival"] <= q["t_first"] <= q["t_done"])
               or q["status"] not in ("done", "cut", "not-arrived")]
        check(not bad, "%s: done requests have arrival <= first token <= last (%d bad)" % (
            rg, len(bad)))
        check(s["total"]["done"] > 0, "%s: %d requests served" % (rg, s["total"]["done"]))
        tickets = sum(t["tickets"] for t in s["tenants"].values())
        cg = []
        with open(os.path.join(d, "samples.csv")) as f:
            next(f)
            for line in f:
                t, n, c, b, _ = line.strip().split(",")
                cg.append((float(t), n, int(c), int(b)))
        by_t = {}
        for t, n, c, b in cg:
            by_t[t] = by_t.get(t, 0) + c
        if rg == "A":
            check(tickets == 0 and all(c == 0 for _, _, c, _ in cg),
                  "A: no authority, no tickets")
            peak = max(max((row[2] for row in x["samples"]), default=0) for x in reps.values())
            check(peak <= share, "A: no server's charge above its split (%d <= %d)" % (
                peak, share))
            continue
        check(len(by_t) > 10, "%s: the authority sampled (%d samples)" % (rg, len(by_t)))
        check(max(by_t.values()) <= cap, "%s: the ledger never above the capacity "
              "(%d <= %d)" % (rg, max(by_t.values()), cap))
        if rg == "B":
            check(max(c for _, _, c, _ in cg) <= share and max(b for *_, b in cg) == 0,
                  "B: no cgroup above its max = min, none borrowed")
            check(s["total"]["refusals"] > 0, "B: the caps refused (%d)" % s["total"]["refusals"])
        if rg == "C":
            bo = max(b for *_, b in cg)
            check(bo > 0 and max(c for _, _, c, _ in cg) > share,
                  "C: a tenant borrowed beyond its min (%d bytes)" % bo)
            check(tickets > 0 and s["total"]["recalled"] > 0,
                  "C: tickets were read (%d) and answered with bytes (%d)" % (
                      tickets, s["total"]["recalled"]))
            ev = [e for x in reps.values() for e in x["events"]]
            gens = {(n, e["generation"]) for n, x in reps.items() for e in x["events"]
                    if e["type"] == "ticket"}
            ans = {(n, e["generation"]) for n, x in reps.items() for e in x["events"]
                   if e["type"] == "answer"}
            check(gens and ans <= gens, "C: every answer follows its ticket (%d events)" % len(ev))
    p = res["probe"] or {}
    check(p.get("rounds") == 3 and p.get("granted") == 3 and p.get("recall_rounds") == 3,
          "probe: 3 rounds, each granted after a RECALL ticket (%s)" % {
              k: p.get(k) for k in ("rounds", "granted", "recall_rounds")})
    check(all(x >= p.get("bytes", 1) // 2 for x in p.get("released_per_round", [0])),
          "probe: the borrower released at least half of what was asked each round (%s)" %
          p.get("released_per_round"))
    with open(os.path.join(out, "report.txt")) as f:
        rep = f.read()
    check("Targets" in rep and "A seed 1" in rep, "report.txt has the runs and the targets")
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
