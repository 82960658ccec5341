#!/usr/bin/env python3
"""Where and when a run found its new edges: tells whether coverage still growing late in a run
is in wlmap's code or deep in a dependency (a YAML tag, a float's formatting).

    python3 fuzz/new_edges.py TARGET [--last N] [--bin DIR] [--out LIBFUZZER_OUTPUT]

Prints the last N new edges by source file, and per part of the program (wlmap's crates, each
dependency, the standard library) how many edges the run added and the execution at which it
added its last. Needs a run made by plateau.sh with FUZZ_ARGS=-print_pcs=1 under
`setarch x86_64 -R` (no address randomisation), so that each NEW_PC in logs/TARGET.out is the
binary's offset + 0x555555554000.
"""
import argparse
import collections
import os
import pathlib
import re
import subprocess

BASE = 0x555555554000
HERE = pathlib.Path(__file__).resolve().parent


def source(frames):
    """The innermost frame outside the standard library: an edge in an inlined `Vec::push`
    belongs to the function that pushed."""
    pick = next((f for f in frames if not f.startswith("/rustc/")), frames[0] if frames else "??")
    pick = re.sub(r":[0-9?]+( .*)?$", "", pick)
    pick = re.sub(r"^.*/index\.crates\.io-[^/]+/", "", pick)
    pick = re.sub(r"^/rustc/[^/]+/library/", "std/", pick)
    return re.sub(r"^.*/work/[^/]+/", "", pick)


def part(path):
    head = path.split("/")[0]
    if head == "crates":
        return "wlmap (" + path.split("/")[1] + ")"
    return head if head not in ("", "??") else "unknown"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("target")
    ap.add_argument("--last", type=int, default=200)
    ap.add_argument("--out", help="libFuzzer's output (default: logs/TARGET.out)")
    ap.add_argument("--bin", default=os.environ.get(
        "FUZZ_BIN", str(HERE / "target/x86_64-unknown-linux-gnu/release")))
    a = ap.parse_args()
    pcs, execs, pending = [], [], []
    out = pathlib.Path(a.out or HERE / "logs" / f"{a.target}.out")
    for line in out.read_text(errors="replace").splitlines():
        m = re.search(r"NEW_PC: (0x[0-9a-f]+)", line)
        if m:
            pending.append(int(m.group(1), 16) - BASE)
            continue
        m = re.match(r"#(\d+)", line)
        if m and pending:
            pcs += pending
            execs += [int(m.group(1))] * len(pending)
            pending = []
    if not pcs:
        raise SystemExit(f"no NEW_PC in {out}: run with FUZZ_ARGS=-print_pcs=1")
    out = subprocess.run(
        ["addr2line", "-a", "-i", "-e", f"{a.bin}/{a.target}"],
        input="".join(f"{hex(p)}\n" for p in pcs), capture_output=True, text=True, check=True)
    files, frames = [], None
    for line in out.stdout.splitlines():
        if line.startswith("0x"):
            if frames is not None:
                files.append(source(frames))
            frames = []
        else:
            frames.append(line)
    files.append(source(frames))
    print(f"last {min(a.last, len(files))} new edges by source file:")
    for f, n in collections.Counter(files[-a.last:]).most_common(15):
        print(f"  {n:5} {f}")
    print("all new edges of the run by part (edges, last found at execution):")
    last, count = {}, collections.Counter()
    for f, e in zip(files, execs):
        count[part(f)] += 1
        last[part(f)] = e
    for p, n in count.most_common():
        print(f"  {n:5}  #{last[p]:<10} {p}")
    print(f"run: {len(files)} new edges, the last at execution #{execs[-1]}")


if __name__ == "__main__":
    main()
