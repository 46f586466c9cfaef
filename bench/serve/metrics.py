# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""The serving benchmark's figures, from the servers' reports and the
coordinator's samples (serve.py), without PyTorch.

Per tenant and run:
  requests      arrived during the load (every request of the load.json)
  done          finished before the end
  TTFT          first token - arrival, over requests that got one (p50, p99)
  TPOT          (last token - first token) / (output tokens - 1), finished
                requests with more than one output token (p50, p99)
  SLO           finished, TTFT <= slo_ttft and TPOT <= slo_tpot; everything
                else (refused until the end, cut, slow) is a miss
  refusals      allocations of a KV cache refused (each try); of them
  oom_in_min    refused although the tenant's charge plus the request was
                within its guarantee (after the retries that the tickets
                it caused allow): the target is 0 under C
  preempted     requests preempted by a RECALL ticket (their KV given back)
  borrowed      the authority's borrowed bytes for the cgroup: peak, mean
  recalled      bytes this tenant released answering tickets (events)
  tickets       tickets read, RECALL among them; ticket -> answer (p50, p99)
  guarantee wait  the wait of admissions inside the guarantee that were
                refused at first (ask -> grant, p50, p99)
Per run: HBM in use, the sum of the servers' charges (the arena's charge,
or PyTorch's reserved bytes under a static split) over the capacity the
tenants were given, the same measure in every regime: its mean over the
whole run and over the "burst" samples, those where some tenant had an
arrived request waiting (its demand above what it held); NVML's reading
of the whole device beside it (contexts included, over the card's total).
"""
import math
import statistics


def pct(xs, p):
    """The p-th percentile (nearest rank) of xs, None if empty."""
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    k = max(0, min(len(xs) - 1, int(math.ceil(p / 100.0 * len(xs))) - 1))
    return xs[k]


def tenant_summary(rep, slo_ttft, slo_tpot):
    reqs = rep["requests"]
    ttft = [r["t_first"] - r["arrival"] for r in reqs if r["t_first"] is not None]
    tpot = [(r["t_done"] - r["t_first"]) / (r["out"] - 1) for r in reqs
            if r["t_done"] is not None and r["out"] > 1]
    ok = 0
    for r in reqs:
        if r["t_done"] is None or r["t_first"] is None:
            continue
        tp = (r["t_done"] - r["t_first"]) / (r["out"] - 1) if r["out"] > 1 else 0.0
        if r["t_first"] - r["arrival"] <= slo_ttft and tp <= slo_tpot:
            ok += 1
    ev = rep.get("events") or []
    tickets = [e for e in ev if e["type"] == "ticket"]
    answers = [e for e in ev if e["type"] == "answer"]
    by_gen = {}
    for e in tickets:
        by_gen.setdefault(e["generation"], e["t"])
    lat = [(e["t"] - by_gen[e["generation"]]) * 1e3 for e in answers if e["generation"] in by_gen]
    waits = rep.get("guarantee_waits_ms") or []
    refusals = rep.get("refusals") or []
    return {
        "requests": len(reqs),
        "done": sum(1 for r in reqs if r["status"] == "done"),
        "slo_ok": ok,
        "ttft_p50": pct(ttft, 50), "ttft_p99": pct(ttft, 99),
        "tpot_p50": pct(tpot, 50), "tpot_p99": pct(tpot, 99),
        "refusals": len(refusals),
        "oom_in_min": sum(1 for x in refusals if x[3]),
        "preempted": len(rep.get("preemptions") or []),
        "recalled": sum(e["released"] for e in answers),
        "tickets": len(tickets),
        "recall_tickets": sum(1 for e in tickets if e["level"] == "RECALL"),
        "ticket_answer_p50_ms": pct(lat, 50), "ticket_answer_p99_ms": pct(lat, 99),
        "guarantee_wait_p50_ms": pct(waits, 50), "guarantee_wait_p99_ms": pct(waits, 99),
        "guarantee_waits": len(waits),
        "error": rep.get("error"),
    }


def summarise(load, tenants, samples, slo_ttft, slo_tpot):
    per = {n: tenant_summary(r, slo_ttft, slo_tpot) for n, r in tenants.items()}
    # the authority's borrowed bytes per tenant
    for n in per:
        bo = [s[3] for s in samples["cg"] if s[1] == n]
        per[n]["borrowed_peak"] = max(bo) if bo else 0
        per[n]["borrowed_mean"] = statistics.mean(bo) if bo else 0
    cap = load["capacity"]
    dev = samples["dev"]
    burst_t = burst_times(tenants)
    # HBM in use: what the tenants hold (each server's charge: the arena's,
    # or PyTorch's reserved bytes) over the capacity they were given, the
    # same measure in every regime; NVML's device-wide reading beside it
    # (it counts the CUDA contexts and the rest of the card)
    use = charge_sum(tenants, cap)
    nvml = [u / tot for t, u, tot in dev]
    in_burst = [f for t, f in use if any(a <= t < b for a, b in burst_t)]
    total = {
        "requests": sum(p["requests"] for p in per.values()),
        "slo_ok": sum(p["slo_ok"] for p in per.values()),
        "done": sum(p["done"] for p in per.values()),
        "oom_in_min": sum(p["oom_in_min"] for p in per.values()),
        "refusals": sum(p["refusals"] for p in per.values()),
        "preempted": sum(p["preempted"] for p in per.values()),
        "recalled": sum(p["recalled"] for p in per.values()),
        "hbm_mean": statistics.mean([f for _, f in use]) if use else None,
        "hbm_burst_mean": statistics.mean(in_burst) if in_burst else None,
        "hbm_burst_p50": pct(in_burst, 50),
        "burst_samples": len(in_burst),
        "hbm_source": "the servers' charges / capacity",
        "nvml_used_mean": statistics.mean(nvml) if nvml else None,
        "errors": [n for n, p in per.items() if p["error"]],
    }
    return {"tenants": per, "total": total, "bursts": burst_t}


def burst_times(tenants):
    """Intervals (from the servers' samples) in which some tenant had an
    arrived request waiting: demand above what it held."""
    out = []
    for n, r in tenants.items():
        rows = r.get("samples") or []
        start = None
        for row in rows:
            t, waiting = row[0], row[4]
            if waiting and start is None:
                start = t
            elif not waiting and start is not None:
                out.append((start, t))
                start = None
        if start is not None and rows:
            out.append((start, rows[-1][0]))
    return sorted(out)


def charge_sum(tenants, cap):
    """[(t, sum of charges / cap)] on a common 0.1 s grid."""
    series = {}
    for n, r in tenants.items():
        for row in r.get("samples") or []:
            series.setdefault(round(row[0], 1), {})[n] = row[2]
    last = {}
    out = []
    for t in sorted(series):
        last.update(series[t])
        out.append((t, sum(last.values()) / cap))
    return out


def run_line(s):
    t = s["total"]
    f = lambda v: "-" if v is None else "%.0f%%" % (100 * v)  # noqa: E731
    return ("%s seed %d: %d/%d requests within SLO, %d done, OOMs inside min %d, refusals %d, "
            "preempted %d, recalled %.2f GiB, HBM in use %s (bursts %s)" % (
                s["regime"], s["seed"], t["slo_ok"], t["requests"], t["done"], t["oom_in_min"],
                t["refusals"], t["preempted"], t["recalled"] / 2**30, f(t["hbm_mean"]),
                f(t["hbm_burst_mean"])))


def probe_summary(rounds, nbytes):
    g = [r for r in rounds if r["granted"]]
    tg = [r["ticket_to_grant_ms"] for r in g if r["ticket_to_grant_ms"] is not None]
    return {"bytes": nbytes, "rounds": len(rounds), "granted": len(g),
            "recall_rounds": sum(1 for r in rounds if "RECALL" in r["levels"]),
            "ticket_to_grant_p50_ms": pct(tg, 50), "ticket_to_grant_p99_ms": pct(tg, 99),
            "ticket_to_grant_max_ms": max(tg) if tg else None,
            "ask_to_grant_p50_ms": pct([r["ask_to_grant_ms"] for r in g], 50),
            "ask_to_grant_p99_ms": pct([r["ask_to_grant_ms"] for r in g], 99),
            "ticket_to_answer_p99_ms": pct([r["ticket_to_answer_ms"] for r in g], 99),
            "released_per_round": [r["released"] for r in rounds],
            "rounds_detail": rounds}


def _f(v, fmt="%.3f"):
    return "-" if v is None else fmt % v


def report(results, probe, a):
    L = []
    L.append("Serving benchmark: %d tenants, %s, %g s of load + %g s drain; SLO: TTFT <= %g s, "
             "TPOT <= %g s" % (a.tenants, a.shape if a.engine == "real" else "mock model",
                               a.duration, a.drain, a.slo_ttft, a.slo_tpot))
    L.append("")
    for s in results:
        if "failed" in s:
            L.append("%s seed %d: FAILED: %s" % (s["regime"], s["seed"], s["failed"]))
            continue
        L.append(run_line(s))
        L.append("  tenant  req  done  SLO   TTFT p50/p99 s   TPOT p50/p99 s   refused  "
                 "OOM-in-min  preempt  borrowed peak GiB  recalled GiB  tickets(RECALL)  "
                 "ticket->answer p50/p99 ms  guarantee wait p50/p99 ms")
        for n, p in sorted(s["tenants"].items()):
            L.append("  %-6s %4d %5d %4d   %s/%s   %s/%s   %7d  %10d  %7d  %17.2f  %12.2f  "
                     "%7d(%d)  %s/%s  %s/%s%s" % (
                         n, p["requests"], p["done"], p["slo_ok"], _f(p["ttft_p50"], "%.2f"),
                         _f(p["ttft_p99"], "%.2f"), _f(p["tpot_p50"]), _f(p["tpot_p99"]),
                         p["refusals"], p["oom_in_min"], p["preempted"],
                         p["borrowed_peak"] / 2**30, p["recalled"] / 2**30, p["tickets"],
                         p["recall_tickets"], _f(p["ticket_answer_p50_ms"], "%.1f"),
                         _f(p["ticket_answer_p99_ms"], "%.1f"),
                         _f(p["guarantee_wait_p50_ms"], "%.1f"),
                         _f(p["guarantee_wait_p99_ms"], "%.1f"),
                         "  ERROR" if p["error"] else ""))
    L.append("")
    ok = [s for s in results if "failed" not in s]
    by = {}
    for s in ok:
        by.setdefault(s["regime"], []).append(s)
    med = {}
    L.append("Medians over seeds:")
    L.append("  regime  runs  within SLO  of requests  OOMs in min  refusals  preempted  "
             "HBM in use  HBM in bursts")
    for rg, ss in by.items():
        m = lambda k: statistics.median([x["total"][k] for x in ss  # noqa: E731
                                         if x["total"][k] is not None] or [float("nan")])
        med[rg] = {k: m(k) for k in ("slo_ok", "requests", "oom_in_min", "refusals",
                                     "preempted", "hbm_mean", "hbm_burst_mean")}
        d = med[rg]
        L.append("  %-7s %4d  %10.0f  %11.0f  %11.0f  %8.0f  %9.0f  %9.0f%%  %12.0f%%" % (
            rg, len(ss), d["slo_ok"], d["requests"], d["oom_in_min"], d["refusals"],
            d["preempted"], 100 * d["hbm_mean"], 100 * d["hbm_burst_mean"]))
    L.append("")
    L.append("Targets (C against A, medians):")
    if "A" in med and "C" in med:
        A, C = med["A"], med["C"]
        ratio = C["slo_ok"] / A["slo_ok"] if A["slo_ok"] else float("inf")
        L.append("  requests within SLO >= 1.5x A: %.2fx -> %s" % (
            ratio, "met" if ratio >= 1.5 else "MISSED"))
        worst = max(x["total"]["oom_in_min"] for x in by["C"])
        L.append("  0 OOMs inside the guarantee while others borrow: %d in the worst run -> %s" % (
            worst, "met" if worst == 0 else "MISSED"))
        L.append("  HBM in use >= 90%% during bursts: %.0f%% -> %s" % (
            100 * C["hbm_burst_mean"], "met" if C["hbm_burst_mean"] >= 0.9 else "MISSED"))
    else:
        L.append("  (needs regimes A and C)")
    if probe and "ticket_to_grant_p99_ms" in probe:
        p99 = probe["ticket_to_grant_p99_ms"]
        L.append("  recall of %.0f MiB from an idle borrower <= 100 ms p99: ticket->grant p50 %s, "
                 "p99 %s ms over %d rounds (%d granted, %d with a RECALL ticket); ask->grant "
                 "p50 %s, p99 %s ms -> %s" % (
                     probe["bytes"] / 2**20, _f(probe["ticket_to_grant_p50_ms"], "%.1f"),
                     _f(p99, "%.1f"), probe["rounds"], probe["granted"],
                     probe["recall_rounds"], _f(probe["ask_to_grant_p50_ms"], "%.1f"),
                     _f(probe["ask_to_grant_p99_ms"], "%.1f"),
                     "met" if p99 is not None and p99 <= 100 and
                     probe["granted"] == probe["rounds"] else "MISSED"))
    elif probe:
        L.append("  recall probe: %s" % probe)
    return "\n".join(L) + "\n"
