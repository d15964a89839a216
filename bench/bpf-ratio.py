#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""bench/bpf-overhead.sh's figures for one case, from the files its rounds left in OUT.

  bpf-ratio.py OUT NAME QD ROUNDS

Per round r of case NAME-qdQD: fio's JSON of the runs without the program (-off-r), with it
(-on-r), with it and the floor's empty programs (-both-r) and the floor alone (-floor-r), and
`bpftool prog show --json` before and after the last three (.before, .after). Prints `key: value` lines: the IOPS ratio
(with / without, median of the paired rounds), the program's run time per request (the on runs),
and, from the both runs, where the same requests ran both, each program's run time per call
against the floor's on the same hook, and the pair's; with a baseline build's programs attached
there too (their ids in -base-r.ids), the same for them. The figure that counts compares each
alone: the program in the on runs against the floor in the floor runs (the first program on a
hook pays for cache lines the ones after it find warm, so stacked, the floor looks cheaper).
"""

import json
import statistics
import sys

PAIRS = (("issue", "iogap_issue", "floor_issue"), ("completion", "iogap_complete", "floor_complete"))


def fio(path):
    j = json.load(open(path))["jobs"][0]["read"]
    return j["iops"], j["clat_ns"]["mean"]


def stats(path):
    """{(id, name): (run_time_ns, run_cnt)} of the programs loaded"""
    return {(p["id"], p.get("name", "")): (p.get("run_time_ns", 0), p.get("run_cnt", 0))
            for p in json.load(open(path))}


def add_deltas(total, before, after, base_ids=()):
    """total[name] += (time, count) each program ran between the two snapshots; the baseline
    build's programs (base_ids) as base_NAME"""
    for key, (t1, c1) in after.items():
        t0, c0 = before.get(key, (0, 0))
        name = ("base_" if key[0] in base_ids else "") + key[1]
        t, c = total.get(name, (0, 0))
        total[name] = (t + t1 - t0, c + c1 - c0)


def ids(path):
    try:
        return {int(x) for x in open(path).read().split()}
    except FileNotFoundError:
        return set()


def per_call(total, name):
    t, c = total.get(name, (0, 0))
    return t / c if c else float("nan")


def main():
    out, name, qd, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    tag = f"{name}-qd{qd}"
    w0, w1, l0, l1 = [], [], [], []
    on, both, alone = {}, {}, {}
    for r in range(rounds):
        i, lat = fio(f"{out}/{tag}-off-{r}.json")
        w0.append(i)
        l0.append(lat)
        i, lat = fio(f"{out}/{tag}-on-{r}.json")
        w1.append(i)
        l1.append(lat)
        add_deltas(on, stats(f"{out}/{tag}-on-{r}.before"), stats(f"{out}/{tag}-on-{r}.after"))
        add_deltas(both, stats(f"{out}/{tag}-both-{r}.before"), stats(f"{out}/{tag}-both-{r}.after"),
                   ids(f"{out}/{tag}-base-{r}.ids"))
        add_deltas(alone, stats(f"{out}/{tag}-floor-{r}.before"), stats(f"{out}/{tag}-floor-{r}.after"))
    m0, m1 = statistics.median(w0), statistics.median(w1)
    ratios = [b / a for a, b in zip(w0, w1)]
    ratio = statistics.median(ratios)
    # per request at queue depth qd: qd / IOPS is the time one request holds a slot
    added = (qd / (m0 * ratio) - qd / m0) * 1e9
    print(f"{name}_qd{qd}_iops: without {m0:.0f}, with {m1:.0f}; ratio {ratio:.4f} (median of the paired "
          "rounds: " + ", ".join(f"{x:.3f}" for x in ratios) + ")")
    print(f"{name}_qd{qd}_added_ns_per_request_from_iops: {added:.0f}; mean completion latency "
          f"{statistics.median(l0):.0f} -> {statistics.median(l1):.0f} ns")
    # each request runs the issue and the completion program once
    ns = {k: per_call(on, prog) for k, prog, _ in PAIRS}
    print(f"{name}_qd{qd}_program_ns_per_request: {sum(ns.values()):.0f} (issue hook {ns['issue']:.0f}, "
          f"completion hook {ns['completion']:.0f}; kernel.bpf_stats over {on.get('iogap_issue', (0, 0))[1]} "
          "requests)")
    fa = {k: per_call(alone, f) for k, _, f in PAIRS}
    print(f"{name}_qd{qd}_floor_alone_ns_per_request: {sum(fa.values()):.0f} (issue hook {fa['issue']:.0f}, "
          f"completion hook {fa['completion']:.0f}: the two empty programs alone on the hooks)")
    print(f"{name}_qd{qd}_ratio_to_floor_alone: {sum(ns.values()) / sum(fa.values()):.2f} (each alone: program "
          f"{sum(ns.values()):.0f} ns / floor {sum(fa.values()):.0f} ns per request; issue hook "
          f"{ns['issue'] / fa['issue']:.2f}, completion hook {ns['completion'] / fa['completion']:.2f})")
    prog = {k: per_call(both, p) for k, p, _ in PAIRS}
    floor = {k: per_call(both, f) for k, _, f in PAIRS}
    print(f"{name}_qd{qd}_floor_ns_per_request: {sum(floor.values()):.0f} (issue hook {floor['issue']:.0f}, "
          f"completion hook {floor['completion']:.0f}: two empty programs on the same hooks, same requests, attached last)")
    print(f"{name}_qd{qd}_ratio_to_floor_stacked: {sum(prog.values()) / sum(floor.values()):.2f} (program "
          f"{sum(prog.values()):.0f} ns / floor {sum(floor.values()):.0f} ns per request; issue hook "
          f"{prog['issue'] / floor['issue']:.2f}, completion hook {prog['completion'] / floor['completion']:.2f})")
    if "base_iogap_issue" in both:
        base = {k: per_call(both, "base_" + p) for k, p, _ in PAIRS}
        print(f"{name}_qd{qd}_baseline_ratio_to_floor: {sum(base.values()) / sum(floor.values()):.2f} "
              f"(the baseline build's program {sum(base.values()):.0f} ns on the same requests; issue hook "
              f"{base['issue'] / floor['issue']:.2f}, completion hook {base['completion'] / floor['completion']:.2f})")


if __name__ == "__main__":
    main()
