#!/usr/bin/env python3
"""Differential check: the Go project's catalog definitions against wlmap's own catalog.

For every Go definition (Karta YAML) in GO_DEFS_DIR whose root kind has wlmap fixtures
(crates/catalog/fixtures/<slug>/<state>/objects.yaml, first document = root) or recorded
states (the conformance corpus: every STATE event's `object`), describe the root twice with
the wlmap binary: once with `--definitions <go file>` (theirs), once with the built-in
catalog (ours). Print a Markdown table of every state where status phase/phases, desired
pods or GPUs differ, then every state where the Go definition errors or gives no status.

The Go definitions are NOT in this repository (their code stays out of it): fetch them
from the Go project's docs/catalog/<slug>.yaml (dsx-ai-factory/workload-map, formerly
dsx-ai-factory/karta and run-ai/karta) into a directory of your own.

Usage: scripts/go-catalog-diff.py GO_DEFS_DIR [--wlmap PATH] [--recorded DIR] [--ours-from-source]
(--ours-from-source: read ours from crates/catalog/definitions/ rather than the catalog
built into the binary, for a binary older than the working tree.)
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CATALOG = os.path.join(ROOT, "crates", "catalog")


def root_gvk(path):
    """(group, version, kind) of a definition file's root component."""
    kind = yaml.safe_load(open(path))["spec"]["structureDefinition"]["rootComponent"]["kind"]
    return (kind.get("group") or "", kind["version"], kind["kind"])


def describe(wlmap, obj_file, obj, definitions=None):
    """Run `wlmap describe` on the object; return (summary or None, error text or "").

    A partial answer (exit 5, a component could not be read) still carries JSON: keep it.
    """
    group, _, version = obj["apiVersion"].rpartition("/")
    target = f"{obj['kind']}.{version}.{group}"  # kind.version.group ("Pod.v1." for core)
    meta = obj["metadata"]
    cmd = [wlmap, "--snapshot", obj_file]
    if definitions:
        cmd += ["--definitions", definitions]
    cmd += ["describe", target, meta["name"], "-n", meta.get("namespace", "default"), "-o", "json"]
    run = subprocess.run(cmd, capture_output=True, text=True)
    err = f"exit {run.returncode}: {run.stderr.strip()}" if run.returncode else ""
    try:
        out = json.loads(run.stdout)
    except ValueError:
        return None, err or "no JSON output"
    if definitions and out.get("definition", {}).get("origin") != "file":
        return None, f"definition file not used ({out.get('definition')})"
    status = out.get("status") or {}
    return {
        "phase": status.get("phase"),
        "phases": status.get("phases") or [],
        "desired": (out.get("pods") or {}).get("desired"),
        "gpus": (out.get("resources") or {}).get("gpus"),
    }, err


def show(result, err):
    text = ""
    if result is not None:
        gpus = result["gpus"]
        gpus = int(gpus) if isinstance(gpus, float) and gpus.is_integer() else gpus
        text = f"{result['phase']} {result['phases']} pods={result['desired']} gpus={gpus}"
    if err:
        text += f" ({err})" if text else err
    return text.replace("|", "\\|").replace("\n", " ")


def states(slug, recorded_dir):
    """Yield (label, root object, file or None) for every fixture state and recorded STATE event of a slug."""
    for objects in sorted(glob.glob(os.path.join(CATALOG, "fixtures", slug, "*", "objects.yaml"))):
        root = next(d for d in yaml.safe_load_all(open(objects)) if d)
        yield f"fixture {os.path.basename(os.path.dirname(objects))}", root, objects
    for rec in sorted(glob.glob(os.path.join(recorded_dir, "**", slug, "*.yaml"), recursive=True)):
        events = yaml.safe_load(open(rec)).get("events") or []
        for i, ev in enumerate(events):
            if ev.get("kind") == "STATE" and ev.get("object"):
                name = os.path.relpath(rec, recorded_dir)
                yield f"recorded {name}#{i} (truth {ev.get('state')})", ev["object"], None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("go_defs_dir")
    ap.add_argument("--wlmap", default="wlmap")
    ap.add_argument("--recorded", default="/work/shared/conformance/recorded")
    ap.add_argument("--ours-from-source", action="store_true")
    args = ap.parse_args()

    ours = {root_gvk(p): os.path.basename(p)[:-5]
            for p in glob.glob(os.path.join(CATALOG, "definitions", "*.yaml"))}
    diffs, failures, loaded, compared = [], [], 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for go_file in sorted(glob.glob(os.path.join(args.go_defs_dir, "*.yaml"))):
            loaded += 1
            go_name = os.path.basename(go_file)[:-5]
            slug = ours.get(root_gvk(go_file))
            if slug is None:
                continue
            our_file = os.path.join(CATALOG, "definitions", slug + ".yaml") if args.ours_from_source else None
            for label, obj, obj_file in states(slug, args.recorded):
                if obj_file is None:
                    obj_file = os.path.join(tmp, "object.yaml")
                    with open(obj_file, "w") as f:
                        yaml.safe_dump(obj, f)
                theirs, their_err = describe(args.wlmap, obj_file, obj, go_file)
                mine, my_err = describe(args.wlmap, obj_file, obj, our_file)
                compared += 1
                row = f"| {go_name} | {label} | {show(theirs, their_err)} | {show(mine, my_err)} |"
                if theirs != mine:
                    diffs.append(row)
                if their_err or theirs is None or theirs["phase"] in (None, "Undefined"):
                    failures.append(row)

    header = "| Definition | State | Go catalog | wlmap |\n|---|---|---|---|"
    print("## Differences\n\n" + header)
    print("\n".join(diffs))
    print("\n## Go catalog errors or no status\n\n" + header)
    print("\n".join(failures))
    print(f"\nSummary: {loaded} Go definitions loaded, {compared} states compared, "
          f"{len(diffs)} differences, {len(failures)} Go errors/no status.")


if __name__ == "__main__":
    sys.exit(main())
