# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""One picture per run of the serving benchmark: each tenant's memory over
time (its charge as the server sampled it: the arena's charge, or PyTorch's
reserved bytes under a static split), the capacity and each tenant's
share, the load's "on" phases shaded per tenant, and the tickets each
tenant read marked (x: ASK, triangle: RECALL), preemptions as dots.
matplotlib where it is installed; otherwise a gnuplot script and its data
beside the run (memory.gp: gnuplot memory.gp draws memory.png)."""
import os

GiB = float(1 << 30)


def draw(run_dir, load, tenants, samples, summ):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return gnuplot(run_dir, load, tenants)
    names = sorted(tenants)
    fig, ax = plt.subplots(figsize=(12, 5.5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, n in enumerate(names):
        c = colors[i % len(colors)]
        rows = tenants[n].get("samples") or []
        ax.plot([r[0] for r in rows], [r[2] / GiB for r in rows], color=c, lw=1.4,
                label="%s charge" % n)
        ax.plot([r[0] for r in rows], [r[1] / GiB for r in rows], color=c, lw=0.8, ls=":")
        for ph in load["phases"]:
            if ph["tenant"] == n:
                ax.axvspan(ph["on"], ph["off"], ymin=i / len(names) * 0.06,
                           ymax=(i + 1) / len(names) * 0.06, color=c, alpha=0.8, lw=0)
        ev = [e for e in tenants[n].get("events") or [] if e["type"] == "ticket"]
        y = {r[0]: r[2] for r in rows}
        ts = sorted(y)

        def at(t):
            if not ts:
                return 0
            k = min(range(len(ts)), key=lambda j: abs(ts[j] - t))
            return y[ts[k]] / GiB
        for lvl, mk in (("ASK", "x"), ("RECALL", "v")):
            pts = [e["t"] for e in ev if e["level"] == lvl]
            if pts:
                ax.scatter(pts, [at(t) for t in pts], marker=mk, color=c, s=28, zorder=5)
        pre = [p[0] for p in tenants[n].get("preemptions") or []]
        if pre:
            ax.scatter(pre, [at(t) for t in pre], marker="o", color=c, s=10, zorder=5)
    ax.axhline(load["capacity"] / GiB, color="k", lw=1, ls="--", label="capacity")
    ax.axhline(load["share"] / GiB, color="grey", lw=1, ls="-.", label="share (min)")
    dev = samples.get("dev") or []
    if dev:
        ax.plot([d[0] for d in dev], [d[1] / GiB for d in dev], color="k", lw=0.8,
                alpha=0.5, label="device used (NVML)")
    for a, b in summ.get("bursts", []):
        ax.axvspan(a, b, ymin=0.97, ymax=1.0, color="red", alpha=0.15, lw=0)
    t = summ["total"]
    ax.set_title("%s, seed %d: %d/%d within SLO, OOMs inside min %d, preempted %d "
                 "(bars: bursts per tenant; top: requests waiting for memory; "
                 "x ASK / v RECALL tickets; dots: preemptions; dotted: KV)" % (
                     summ["regime"], summ["seed"], t["slo_ok"], t["requests"], t["oom_in_min"],
                     t["preempted"]), fontsize=8)
    ax.set_xlabel("s")
    ax.set_ylabel("GiB")
    ax.legend(fontsize=7, loc="upper right", ncol=2)
    fig.tight_layout()
    fig.savefig(os.path.join(run_dir, "memory.png"), dpi=110)
    plt.close(fig)
    return os.path.join(run_dir, "memory.png")


def gnuplot(run_dir, load, tenants):
    names = sorted(tenants)
    for n in names:
        with open(os.path.join(run_dir, "plot-%s.dat" % n), "w") as f:
            for r in tenants[n].get("samples") or []:
                f.write("%s %f %f\n" % (r[0], r[2] / GiB, r[1] / GiB))
    with open(os.path.join(run_dir, "memory.gp"), "w") as f:
        f.write("set terminal pngcairo size 1200,550\nset output 'memory.png'\n"
                "set xlabel 's'\nset ylabel 'GiB'\n")
        f.write("plot " + ", ".join("'plot-%s.dat' using 1:2 with lines title '%s'" % (n, n)
                                    for n in names) +
                ", %f title 'capacity' dt 2\n" % (load["capacity"] / GiB))
    return os.path.join(run_dir, "memory.gp")
