#!/usr/bin/env python3
"""Where and when a run found its new edges: tells whether coverage still growing late in a run
is in wlmap's code or deep in a dependency (a YAML tag, a float's formatting).

    python3 fuzz/new_edges.py TARGET [--last N] [--bin DIR] [--out LIBFUZZER_OUTPUT]

Prints the last N new edges by source file, and per part of the program (wlmap's crates, each
dependency, the standard library) how many edges the run added and the execution at which it
added its last. With --own it prints one line, `WLMAP_EDGES LAST_EXECUTION`: how many of the
run's new edges are in wlmap's crates and the execution that found the last of them (plateau.sh
polls it; symbolized addresses are cached in logs/TARGET.parts, so each poll symbolizes only
the new ones). Needs a run made by plateau.sh with FUZZ_ARGS=-print_pcs=1 under
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
    root = str(HERE.parent) + "/"  # this checkout, wherever it is
    return pick[len(root):] if pick.startswith(root) else pick


def part(path):
    head = path.split("/")[0]
    if head == "crates":
        return "wlmap (" + path.split("/")[1] + ")"
    return head if head not in ("", "??") else "unknown"


def new_pcs(out):
    """(offset, execution) of every NEW_PC in libFuzzer's output: the NEW_PC lines come before
    the status line (`#N NEW ...`) of the input that found them."""
    found, pending = [], []
    for line in out.read_text(errors="replace").splitlines():
        m = re.search(r"NEW_PC: (0x[0-9a-f]+)", line)
        if m:
            pending.append(int(m.group(1), 16) - BASE)
            continue
        m = re.match(r"#(\d+)", line)
        if m and pending:
            found += [(pc, int(m.group(1))) for pc in pending]
            pending = []
    return found


def sources(binary, pcs):
    """The source file (as `source` names it) of each address."""
    if not pcs:
        return []
    out = subprocess.run(
        ["addr2line", "-a", "-i", "-e", binary],
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
    return files


def own(binary, out, found):
    """How many new edges are wlmap's, and the execution of the last; cached per address."""
    cache = out.with_suffix(".parts")
    known = {}
    if cache.exists():
        for line in cache.read_text().splitlines():
            pc, _, p = line.partition(" ")
            known[int(pc, 16)] = p
    todo = sorted({pc for pc, _ in found if pc not in known})
    fresh = dict(zip(todo, (part(f) for f in sources(binary, todo))))
    if fresh:
        with cache.open("a") as f:
            f.writelines(f"{hex(pc)} {p}\n" for pc, p in fresh.items())
        known.update(fresh)
    mine = [e for pc, e in found if known[pc].startswith("wlmap")]
    print(len(mine), mine[-1] if mine else 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("target")
    ap.add_argument("--last", type=int, default=200)
    ap.add_argument("--own", action="store_true",
                    help="print only: wlmap's new edges, and the execution of the last")
    ap.add_argument("--out", help="libFuzzer's output (default: logs/TARGET.out)")
    ap.add_argument("--bin", default=os.environ.get(
        "FUZZ_BIN", str(HERE / "target/x86_64-unknown-linux-gnu/release")))
    a = ap.parse_args()
    out = pathlib.Path(a.out or HERE / "logs" / f"{a.target}.out")
    found = new_pcs(out)
    binary = f"{a.bin}/{a.target}"
    if a.own:
        return own(binary, out, found)
    if not found:
        raise SystemExit(f"no NEW_PC in {out}: run with FUZZ_ARGS=-print_pcs=1")
    execs = [e for _, e in found]
    files = sources(binary, [pc for pc, _ in found])
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
