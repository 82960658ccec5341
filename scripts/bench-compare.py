#!/usr/bin/env python3
"""Side-by-side table of two benchmark result files (JSON lines with impl, op, kind, samples,
min_ns, median_ns, max_ns), e.g. wlmap's `ops` example and the Go reference harness described
in BENCHMARKS.md. Prints, per (op, kind), both medians and the ratio other/wlmap (how many
times faster wlmap is; < 1 means slower).

    scripts/bench-compare.py rust.jsonl go.jsonl

A file may hold several rounds: the n-th line for an (op, kind) in one file is paired with the
n-th in the other (both implementations measured one right after the other, so that a slow
phase of the machine hits both sides of that ratio). Then each cell is the median over rounds
of that side's medians (min-max over rounds), and the ratio is the median of the per-round
ratios, with their min-max.
"""
import json
import statistics
import sys


def load(path):
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                r = json.loads(line)
                out.setdefault((r["op"], r["kind"]), []).append(r)
    return out


def fmt(ns):
    for unit, div in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= div:
            return f"{ns / div:.3g} {unit}"
    return f"{ns:.0f} ns"


def cell(runs):
    if not runs:
        return "—"
    if len(runs) == 1:
        r = runs[0]
        return f"{fmt(r['median_ns'])} ({fmt(r['min_ns'])}–{fmt(r['max_ns'])})"
    meds = [r["median_ns"] for r in runs]
    return f"{fmt(statistics.median(meds))} ({fmt(min(meds))}–{fmt(max(meds))})"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    ours, theirs = load(sys.argv[1]), load(sys.argv[2])
    rounds = max(len(v) for v in list(ours.values()) + list(theirs.values()))
    if rounds == 1:
        print("| op | kind | wlmap median (min–max) | other median (min–max) | ratio | notes |")
        print("| --- | --- | --- | --- | --- | --- |")
    else:
        print(f"{rounds} rounds. Cells: median over rounds of each round's median (min–max over "
              "rounds); ratio: median of the per-round ratios (min–max).\n")
        print("| op | kind | wlmap | other | ratio | ratio min–max | notes |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
    for key in sorted(set(ours) | set(theirs)):
        a, b = ours.get(key, []), theirs.get(key, [])
        ratios = [y["median_ns"] / x["median_ns"] for x, y in zip(a, b)]
        ratio = f"{statistics.median(ratios):.1f}×" if ratios else "—"
        notes = "; ".join(
            f"{who}: {runs[0]['errors'][0][:80]}"
            for who, runs in (("wlmap", a), ("other", b)) if runs and runs[0].get("errors"))
        if rounds == 1:
            print(f"| {key[0]} | {key[1]} | {cell(a)} | {cell(b)} | {ratio} | {notes} |")
        else:
            spread = f"{min(ratios):.1f}–{max(ratios):.1f}×" if ratios else "—"
            print(f"| {key[0]} | {key[1]} | {cell(a)} | {cell(b)} | {ratio} | {spread} | {notes} |")


if __name__ == "__main__":
    main()
