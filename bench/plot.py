#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The policy benchmark's pictures (bench/run.sh draws them; needs matplotlib,
Debian's python3-matplotlib).

  plot.py tradeoff TSV OUT.svg
      Energy against wake delay, both over the kernel's, one mark per policy
      and trace family, from the table run.sh writes (tradeoff.tsv: family,
      policy, geometric mean of E/kern over the drives, total stall over the
      kernel's total stall; family "all" = every row). The kernel is (1, 1);
      the quadrant where a policy spends less energy and waits less is shaded.

  plot.py timeline [--from S] [--to S] --trace TRACE OUT.svg JSON...
      One drive on one trace: the power state over time under each policy,
      from `nvme-apstd simulate --json --timeline` (each JSON's policies; a
      policy in several files is drawn once), with the trace's I/Os marked.

Exit status 0, 2 on bad usage, 3 when matplotlib is missing (run.sh says the
picture was skipped).
"""

import json
import math
import sys

try:
    import matplotlib
    matplotlib.use("svg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    from matplotlib.lines import Line2D
except ImportError:
    print("plot.py: matplotlib is not installed (Debian: apt-get install python3-matplotlib)", file=sys.stderr)
    sys.exit(3)

# one colour per policy, the same in both pictures
COLOURS = {"none": "#7f7f7f", "kernel": "#d62728", "budget": "#1f77b4", "adaptive": "#2ca02c",
           "adaptive-stat": "#8c564b", "optimum": "#9467bd"}
# filled shapes first; (n, 1, angle) is an n-pointed star
MARKERS = list("osD^vP*Xh<>pd") + [(3, 1, 0), (4, 1, 0), (6, 1, 0), "8"]
# an SVG that stays the same for the same data (no date, fixed hash salt)
SVG_META = {"Date": None}
matplotlib.rcParams["svg.hashsalt"] = "nvme-apstd"
# text as text: smaller files, searchable, and the test can read the labels
matplotlib.rcParams["svg.fonttype"] = "none"
matplotlib.rcParams["font.size"] = 9


def usage():
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    sys.exit(2)


def tradeoff(tsv, out):
    rows = []
    with open(tsv, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            fam, pol, ek, sk = line.split()
            rows.append((fam, pol, float(ek), None if sk == "-" else float(sk)))
    fams = [f for f in dict.fromkeys(r[0] for r in rows) if f != "all"]
    pols = list(dict.fromkeys(r[1] for r in rows))
    pts = [r for r in rows if r[3] is not None]
    xmax = max([1.0] + [r[3] for r in pts if math.isfinite(r[3])]) * 1.08
    ys = [r[2] for r in rows] + [1.0]
    ymin, ymax = min(ys) / 1.15, max(ys) * 1.15

    fig, ax = plt.subplots(figsize=(7.5, 5.2))
    ax.axvspan(0, 1, ymin=0, ymax=(math.log(1) - math.log(ymin)) / (math.log(ymax) - math.log(ymin)),
               color="#2ca02c", alpha=0.10, lw=0)
    ax.text(0.02, ymin * 1.04, "better than the kernel on both", color="#2ca02c", fontsize=8, va="bottom")
    ax.axhline(1, color="#999999", lw=0.8, zorder=1)
    ax.axvline(1, color="#999999", lw=0.8, zorder=1)
    for fi, fam in enumerate(fams):
        for r in pts:
            if r[0] == fam and r[1] != "kernel":
                ax.scatter(min(r[3], xmax), r[2], marker=MARKERS[fi % len(MARKERS)], s=28,
                           color=COLOURS.get(r[1], "black"), alpha=0.75, lw=0.5, edgecolors="white", zorder=3)
    for r in pts:
        if r[0] == "all" and r[1] != "kernel":
            ax.scatter(r[3], r[2], marker="o", s=150, facecolors="none", edgecolors=COLOURS.get(r[1], "black"),
                       lw=2, zorder=4)
            label = "optimum (offline limit)" if r[1] == "optimum" else r[1]
            ax.annotate(f"{label}, all", (r[3], r[2]), textcoords="offset points",
                        xytext=(9, 6) if r[1] == "none" else (9, -13),
                        color=COLOURS.get(r[1], "black"), fontsize=8, fontweight="bold", zorder=6,
                        bbox=dict(boxstyle="round,pad=0.1", fc="white", ec="none", alpha=0.75))
    ax.scatter([1], [1], marker="o", s=90, color=COLOURS["kernel"], zorder=5)
    ax.annotate("kernel (1, 1)", (1, 1), textcoords="offset points", xytext=(7, 7), color=COLOURS["kernel"],
                fontsize=8, fontweight="bold", zorder=6,
                bbox=dict(boxstyle="round,pad=0.1", fc="white", ec="none", alpha=0.75))
    ax.set_yscale("log")
    ticks = [t for t in (0.1, 0.15, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3, 5, 7, 10) if ymin <= t <= ymax]
    ax.set_yticks(ticks)
    ax.set_yticklabels([f"{t:g}" for t in ticks])
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlim(-0.02 * xmax, xmax)
    ax.set_ylim(ymin, ymax)
    ax.set_xlabel("total wake delay / the kernel's (I/O waiting for the drive to wake)")
    ax.set_ylabel("energy / the kernel's (geometric mean over the drives)")
    ax.set_title("APST policies against the kernel's table, per trace family")
    handles = [Line2D([], [], marker="o", ls="", color=COLOURS.get(p, "black"), label=p)
               for p in pols if p != "kernel"]
    handles += [Line2D([], [], marker=MARKERS[i % len(MARKERS)], ls="", color="#444444", label=f)
                for i, f in enumerate(fams) if any(r[0] == f for r in pts)]
    handles.append(Line2D([], [], marker="o", ls="", mfc="none", mec="#444444", ms=10, mew=2,
                          label="all families"))
    ax.legend(handles=handles, loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=7.5, frameon=False)
    skipped = sorted({r[0] for r in rows if r[3] is None})
    note = "wake delay over the kernel's: total over the drives; families where the kernel never waits are left out"
    if skipped:
        note += f" ({', '.join(skipped)})"
    fig.text(0.01, 0.01, note, fontsize=6.5, color="#555555")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(out, metadata=SVG_META)


def timeline(args):
    t0, t1, trace, files = 0.0, 20.0, None, []
    it = iter(args)
    for a in it:
        if a == "--from":
            t0 = float(next(it))
        elif a == "--to":
            t1 = float(next(it))
        elif a == "--trace":
            trace = next(it)
        else:
            files.append(a)
    if not trace or len(files) < 2:
        usage()
    out, files = files[0], files[1:]

    drive, runs = None, {}
    for fn in files:
        with open(fn, encoding="utf-8") as f:
            doc = json.load(f)
        drive = drive or doc["drive"]
        for p in doc["policies"]:
            if "timeline" in p and p["name"] not in runs:
                runs[p["name"]] = p
    order = [p for p in ("none", "kernel", "budget", "adaptive") if p in runs] + \
        [p for p in runs if p not in ("none", "kernel", "budget", "adaptive")]
    if not order:
        print("plot.py: no timeline in the JSON (simulate --json --timeline)", file=sys.stderr)
        sys.exit(1)

    ios = []
    with open(trace, encoding="utf-8") as f:
        for line in f:
            w = line.split()
            if w and not w[0].startswith("#"):
                t = float(w[0])
                if t0 <= t <= t1:
                    ios.append(t)

    states = drive["states"]
    top = len(states) - 1
    fig, axes = plt.subplots(len(order), 1, figsize=(9, 1.35 * len(order) + 0.9), sharex=True, squeeze=False)
    for ax, name in zip(axes[:, 0], order):
        run = runs[name]
        tl = run["timeline"]
        colour = COLOURS.get(name, "black")
        # the state from each change to the next, as one line (serving: ps0); entering and
        # leaving a state as orange bars below the line. Serving (0.1 ms an I/O) is too short
        # to see at this scale: the I/O marks stand for it.
        xs, ys, moving = [], [], {}
        for i, (t, ps, act) in enumerate(tl):
            end = tl[i + 1][0] if i + 1 < len(tl) else max(t, t1)
            if end < t0 or t > t1:
                continue
            a, b = max(t, t0), min(end, t1)
            if ys and ys[-1] == ps and xs[-1] == a:
                xs[-1] = b          # the same level goes on (serving, then resting in ps0)
            else:
                xs += [a, b]
                ys += [ps, ps]
            if act in ("enter", "exit"):
                moving.setdefault(ps, []).append((a, b - a))
        ax.plot(xs, ys, color=colour, lw=1.4)
        for ps, bars in moving.items():
            ax.broken_barh(bars, (0, ps), color="#ff7f0e", alpha=0.6, lw=0)
        # the I/Os as one path of vertical ticks (NaN breaks it between ticks), one tick per
        # 1/1500 of the window: closer ones are one line on the page anyway
        ticks = sorted({round((t - t0) / (t1 - t0) * 1500) / 1500 * (t1 - t0) + t0 for t in ios})
        ax.plot([x for t in ticks for x in (t, t, math.nan)],
                [y for _ in ticks for y in (top + 0.25, top + 0.65, math.nan)], color="#444444", lw=0.7)
        ax.set_ylim(-0.2, top + 0.8)
        ax.set_yticks(range(top + 1))
        ax.set_yticklabels([f"ps{s['ps']}" for s in states], fontsize=7)
        ax.set_ylabel(name, color=colour, fontweight="bold", rotation=0, ha="right", va="center")
        ax.grid(axis="y", color="#eeeeee", lw=0.6)
        ax.text(1.0, 1.02, f"whole trace: {run['energy_j']:.1f} J, waited {run['stall_s'] * 1e3:.0f} ms, "
                f"{run['wakeups_total']} wake-ups", transform=ax.transAxes, ha="right", va="bottom", fontsize=7)
    axes[-1, 0].set_xlim(t0, t1)
    axes[-1, 0].set_xlabel("time, s (| = an I/O arrives; orange = entering or leaving a state)")
    name = trace.split("/")[-1].rsplit(".", 1)[0]
    fig.suptitle(f"{drive['model']}: power state over time on the {name} trace, {t0:g} to {t1:g} s", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, metadata=SVG_META)


def main():
    if len(sys.argv) < 2:
        usage()
    if sys.argv[1] == "tradeoff" and len(sys.argv) == 4:
        tradeoff(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "timeline":
        timeline(sys.argv[2:])
    else:
        usage()


if __name__ == "__main__":
    main()
