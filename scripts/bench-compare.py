#!/usr/bin/env python3
"""Side-by-side table of two benchmark result files (JSON lines with impl, op, kind, samples,
min_ns, median_ns, max_ns), e.g. wlmap's `ops` example and the Go reference harness described
in BENCHMARKS.md. Prints, per (op, kind), both medians with min-max and the ratio other/wlmap
(how many times faster wlmap is; < 1 means slower).

    scripts/bench-compare.py rust.jsonl go.jsonl
"""
import json
import sys


def load(path):
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                r = json.loads(line)
                out[(r["op"], r["kind"])] = r
    return out


def fmt(ns):
    for unit, div in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= div:
            return f"{ns / div:.3g} {unit}"
    return f"{ns:.0f} ns"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    ours, theirs = load(sys.argv[1]), load(sys.argv[2])
    print("| op | kind | wlmap median (min–max) | other median (min–max) | ratio | notes |")
    print("| --- | --- | --- | --- | --- | --- |")
    for key in sorted(set(ours) | set(theirs)):
        a, b = ours.get(key), theirs.get(key)
        cell = lambda r: (f"{fmt(r['median_ns'])} ({fmt(r['min_ns'])}–{fmt(r['max_ns'])})"
                          if r else "—")
        ratio = f"{b['median_ns'] / a['median_ns']:.1f}×" if a and b else "—"
        notes = "; ".join(
            f"{who}: {r['errors'][0][:80] if r.get('errors') else ''}"
            for who, r in (("wlmap", a), ("other", b)) if r and r.get("errors"))
        print(f"| {key[0]} | {key[1]} | {cell(a)} | {cell(b)} | {ratio} | {notes} |")


if __name__ == "__main__":
    main()
