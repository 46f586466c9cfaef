# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""The serving benchmark's load: seeded on/off bursts per tenant, with a
heavy tail of prompt and output lengths.

Each tenant alternates "on" and "off" phases of exponential length (means
on_s and off_s, at least min_phase_s and at most max_phase_x times
the mean each; a tenant's first phase is on or
off at random and starts part-way, so tenants do not burst in step).
Requests arrive as a Poisson process: rate_on per second while on,
rate_on * off_ratio while off.  Prompt and output lengths are log-normal
(medians prompt_median and out_median, shapes prompt_sigma and out_sigma),
capped at prompt_max and out_max: most requests are short, a few are long
and hold a large KV cache for a long time.

rate_on is derived from the tenant's KV share unless given: a burst should
ask for peak times the KV its guarantee holds (Little's law: requests in
flight = rate x time in the server, that time ~ mean output tokens x
tpot_est), so the tenants oversubscribe the GPU when bursts overlap but
not on average (duty cycle on_s / (on_s + off_s)).

make(...) returns a dict, written as the run's load.json by serve.py: the
parameters, each tenant's phases and every request (tenant, id, arrival
in seconds from the start, prompt and output tokens).
"""
import math
import random

DEFAULTS = dict(on_s=8.0, off_s=14.0, min_phase_s=2.0, max_phase_x=2.5, off_ratio=0.05,
                prompt_median=768, prompt_sigma=0.9, prompt_max=8192,
                out_median=96, out_sigma=0.9, out_max=1024,
                peak=2.0, tpot_est=0.06, rate_on=None)


def lognormal_mean(median, sigma, cap):
    """The mean of a capped log-normal, numerically (good to ~1%)."""
    r = random.Random(7)
    n = 20000
    return sum(min(cap, median * math.exp(sigma * r.gauss(0, 1))) for _ in range(n)) / n


def make(seed, tenants, duration_s, kv_share_tokens, **kw):
    """tenants: names; kv_share_tokens: the tokens of KV each tenant's
    guarantee holds (after its weights).  kw overrides DEFAULTS."""
    p = dict(DEFAULTS)
    unknown = set(kw) - set(p)
    if unknown:
        raise ValueError("load: unknown parameters %s" % sorted(unknown))
    p.update({k: v for k, v in kw.items() if v is not None})
    mean_prompt = lognormal_mean(p["prompt_median"], p["prompt_sigma"], p["prompt_max"])
    mean_out = lognormal_mean(p["out_median"], p["out_sigma"], p["out_max"])
    if p["rate_on"] is None:
        in_flight = p["peak"] * kv_share_tokens / (mean_prompt + mean_out)
        p["rate_on"] = in_flight / (mean_out * p["tpot_est"])
    load = {"seed": seed, "duration_s": duration_s, "tenants": list(tenants),
            "kv_share_tokens": kv_share_tokens, "params": p,
            "mean_prompt": mean_prompt, "mean_out": mean_out,
            "phases": [], "requests": []}
    for ti, name in enumerate(tenants):
        r = random.Random(seed * 1000003 + ti)
        on = r.random() < 0.5
        t = -r.uniform(0, p["on_s"] if on else p["off_s"])
        phases = []
        while t < duration_s:
            mean = p["on_s"] if on else p["off_s"]
            d = min(p["max_phase_x"] * mean, max(p["min_phase_s"], r.expovariate(1.0 / mean)))
            a, b = max(t, 0.0), min(t + d, duration_s)
            if b > a:
                phases.append((a, b, on))
            t += d
            on = not on
        for a, b, on in phases:
            if on:
                load["phases"].append({"tenant": name, "on": round(a, 3), "off": round(b, 3)})
            rate = p["rate_on"] * (1.0 if on else p["off_ratio"])
            t = a
            while rate > 0:
                t += r.expovariate(rate)
                if t >= b:
                    break
                pr = int(min(p["prompt_max"], max(16, p["prompt_median"] *
                                                  math.exp(p["prompt_sigma"] * r.gauss(0, 1)))))
                out = int(min(p["out_max"], max(4, p["out_median"] *
                                                 math.exp(p["out_sigma"] * r.gauss(0, 1)))))
                load["requests"].append({"tenant": name, "arrival": round(t, 4),
                                         "prompt": pr, "out": out})
    load["requests"].sort(key=lambda q: (q["arrival"], q["tenant"]))
    for i, q in enumerate(load["requests"]):
        q["id"] = i
    return load


def demand(load, tenant, step=0.5):
    """The KV tokens a tenant's arrived requests would hold if each were
    served at tpot_est from arrival: [(t, tokens)] every step seconds (the
    offered load, for the picture and the 'during bursts' windows)."""
    p = load["params"]
    out = []
    reqs = [q for q in load["requests"] if q["tenant"] == tenant]
    t = 0.0
    while t <= load["duration_s"]:
        tok = sum(q["prompt"] + q["out"] for q in reqs
                  if q["arrival"] <= t < q["arrival"] + q["out"] * p["tpot_est"])
        out.append((round(t, 3), tok))
        t += step
    return out
