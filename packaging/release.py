#!/usr/bin/env python3
"""The release archive of the wlmap binary and its krew manifest.

    packaging/release.py [--binary PATH] [--out DIR] [--base-url URL]

Writes DIR/wlmap-vVERSION-linux-amd64.tar.gz (the binary as `wlmap`, LICENSE, README.md) and
DIR/wlmap.yaml: packaging/krew/wlmap.yaml with the archive's `uri` (BASE-URL/ARCHIVE; by
default the manifest's own release address) and `sha256`. `kubectl krew install --manifest
DIR/wlmap.yaml --archive DIR/ARCHIVE` installs it as `kubectl wlmap`. The archive is
reproducible (sorted, dated at the revision's commit time, gzip without a timestamp).
"""

import argparse
import gzip
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default=str(ROOT / "target/release/wlmap"))
    ap.add_argument("--out", default=str(ROOT / "target/release-archive"))
    ap.add_argument("--base-url", help="where the archive will be downloaded from")
    a = ap.parse_args()
    out = subprocess.run([a.binary, "version", "-o", "json"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"packaging/release.py: {a.binary} version -o json: {out.stderr.strip()}")
    v = json.loads(out.stdout)
    manifest = (ROOT / "packaging/krew/wlmap.yaml").read_text()
    if f"version: v{v['version']}\n" not in manifest:
        sys.exit(f"packaging/release.py: packaging/krew/wlmap.yaml is not for version v{v['version']}")
    name = f"wlmap-v{v['version']}-linux-amd64.tar.gz"
    when = int(os.environ.get("SOURCE_DATE_EPOCH") or subprocess.run(
        ["git", "-C", str(ROOT), "show", "-s", "--format=%ct", v["revision"]],
        capture_output=True, text=True).stdout.strip() or 0)
    files = {"wlmap": (Path(a.binary).read_bytes(), 0o755),
             "LICENSE": ((ROOT / "LICENSE").read_bytes(), 0o644),
             "README.md": ((ROOT / "README.md").read_bytes(), 0o644)}
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for f in sorted(files):
            data, mode = files[f]
            info = tarfile.TarInfo(f)
            info.size, info.mode, info.mtime = len(data), mode, when
            tar.addfile(info, io.BytesIO(data))
    gz = io.BytesIO()
    with gzip.GzipFile(fileobj=gz, mode="wb", mtime=0) as g:
        g.write(raw.getvalue())
    archive = gz.getvalue()
    sha = hashlib.sha256(archive).hexdigest()
    dest = Path(a.out)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / name).write_bytes(archive)
    if a.base_url:
        manifest = re.sub(r"(?m)^(\s*uri: ).*$", lambda m: m.group(1) + a.base_url.rstrip("/") + "/" + name, manifest)
    manifest = re.sub(r'(?m)^(\s*sha256: ).*$', lambda m: m.group(1) + f'"{sha}"', manifest)
    (dest / "wlmap.yaml").write_text(manifest)
    print(json.dumps({"archive": str(dest / name), "sha256": sha, "manifest": str(dest / "wlmap.yaml")}, indent=2))


if __name__ == "__main__":
    main()
