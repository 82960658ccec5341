#!/usr/bin/env python3
"""Build the wlmap container image without a container engine.

    packaging/image.py [--binary PATH] [--out DIR] [--repository NAME]

Writes, from a built `wlmap` binary:
  DIR/oci/          an OCI image layout (index.json, oci-layout, blobs/sha256/...)
  DIR/wlmap.tar     the same image as a tarball `docker load` and `podman load` read
                    (manifest.json beside the OCI layout)
  DIR/image.json    what was written: the image name, digests, the binary's version

The image has one layer: the binary at /usr/local/bin/wlmap, exactly the shared libraries it
needs (as `ldd` names them, with the dynamic loader), Debian's CA certificates, /etc/passwd
and /etc/group naming the non-root user 65532, and /tmp. The config runs `wlmap` as user
65532 and carries the OCI labels (source, version, revision, licenses). The name and labels
come from the binary itself (`wlmap version -o json`), so they always say what runs.

The layer is reproducible: entries sorted, owned by root, dated at the revision's commit time
(or SOURCE_DATE_EPOCH), gzip without a timestamp; the same binary gives the same digests.
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
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
USER = 65532


def die(msg):
    sys.exit(f"packaging/image.py: {msg}")


def version_of(binary):
    out = subprocess.run([binary, "version", "-o", "json"], capture_output=True, text=True)
    if out.returncode != 0:
        die(f"{binary} version -o json failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def libraries(binary):
    """The shared libraries the binary loads, and its dynamic loader, as absolute paths."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True)
    if "not a dynamic executable" in out.stdout + out.stderr or "statically linked" in out.stdout:
        return []
    if out.returncode != 0:
        die(f"ldd {binary}: {out.stderr.strip()}")
    libs = []
    for line in out.stdout.splitlines():
        line = line.strip()
        if "not found" in line:
            die(f"ldd {binary}: a library is missing: {line}")
        m = re.match(r"\S+ => (/\S+) \(", line) or re.match(r"(/\S+) \(", line)
        if m:
            libs.append(m.group(1))
    return libs


def epoch(revision):
    if "SOURCE_DATE_EPOCH" in os.environ:
        return int(os.environ["SOURCE_DATE_EPOCH"])
    out = subprocess.run(["git", "-C", str(ROOT), "show", "-s", "--format=%ct", revision],
                         capture_output=True, text=True)
    return int(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else 0


def layer(binary, mtime):
    """The root filesystem as an uncompressed tar (bytes)."""
    files = {}  # path in the image -> (bytes, mode)
    files["usr/local/bin/wlmap"] = (Path(binary).read_bytes(), 0o755)
    for lib in libraries(binary):
        # The path the loader looks the library up by, with the content of the file it names.
        files[lib.lstrip("/")] = (Path(lib).resolve().read_bytes(), 0o755)
    if not CA_BUNDLE.is_file():
        die(f"{CA_BUNDLE} is missing (apt-get install ca-certificates)")
    files["etc/ssl/certs/ca-certificates.crt"] = (CA_BUNDLE.read_bytes(), 0o644)
    files["etc/passwd"] = (f"root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:{USER}:{USER}:nonroot:/home/nonroot:/sbin/nologin\n".encode(), 0o644)
    files["etc/group"] = (f"root:x:0:\nnonroot:x:{USER}:\n".encode(), 0o644)
    dirs = {"tmp": 0o1777, f"home/nonroot": 0o700}
    for path in files:
        parts = Path(path).parts[:-1]
        for i in range(1, len(parts) + 1):
            dirs.setdefault("/".join(parts[:i]), 0o755)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(set(dirs) | set(files)):
            info = tarfile.TarInfo(name)
            info.mtime, info.uid, info.gid, info.uname, info.gname = mtime, 0, 0, "", ""
            if name in files:
                data, info.mode = files[name]
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                info.type, info.mode = tarfile.DIRTYPE, dirs[name]
                if name == "home/nonroot":
                    info.uid = info.gid = USER
                tar.addfile(info)
    return buf.getvalue()


def digest(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default=str(ROOT / "target/release/wlmap"))
    ap.add_argument("--out", default=str(ROOT / "target/image"))
    ap.add_argument("--repository", default="wlmap",
                    help="the image name without tag (default: wlmap, as the chart names it)")
    a = ap.parse_args()
    binary = os.path.abspath(a.binary)
    if not os.access(binary, os.X_OK):
        die(f"no binary at {binary} (cargo build --release --locked -p wlmap-cli)")
    v = version_of(binary)
    cargo = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["package"]
    created = epoch(v["revision"])
    tar_bytes = layer(binary, created)
    gz = io.BytesIO()
    with gzip.GzipFile(fileobj=gz, mode="wb", mtime=0, compresslevel=6) as g:
        g.write(tar_bytes)
    layer_gz = gz.getvalue()
    created_text = __import__("datetime").datetime.fromtimestamp(created, __import__("datetime").timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    labels = {
        "org.opencontainers.image.title": "wlmap",
        "org.opencontainers.image.description": "wlmap: the workload map of a Kubernetes cluster (CLI, controller, platform view)",
        "org.opencontainers.image.source": cargo["repository"],
        "org.opencontainers.image.version": v["version"],
        "org.opencontainers.image.revision": v["revision"],
        "org.opencontainers.image.licenses": cargo["license"],
        "org.opencontainers.image.created": created_text,
    }
    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": created_text,
        "config": {
            "User": f"{USER}:{USER}",
            "Entrypoint": ["/usr/local/bin/wlmap"],
            "Env": ["PATH=/usr/local/bin", f"SSL_CERT_FILE=/{'etc/ssl/certs/ca-certificates.crt'}"],
            "WorkingDir": "/",
            "Labels": labels,
        },
        "rootfs": {"type": "layers", "diff_ids": [digest(tar_bytes)]},
        "history": [{"created": created_text, "created_by": "packaging/image.py"}],
    }
    config_bytes = canonical(config)
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": digest(config_bytes), "size": len(config_bytes)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                    "digest": digest(layer_gz), "size": len(layer_gz)}],
        "annotations": {k: labels[k] for k in labels if k != "org.opencontainers.image.description"},
    }
    manifest_bytes = canonical(manifest)
    name = f"{a.repository}:{v['version']}"
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": manifest["mediaType"], "digest": digest(manifest_bytes),
                       "size": len(manifest_bytes),
                       "annotations": {"org.opencontainers.image.ref.name": v["version"],
                                       "io.containerd.image.name": name}}],
    }
    blobs = {digest(b): b for b in (config_bytes, layer_gz, manifest_bytes)}
    layout = {"oci-layout": canonical({"imageLayoutVersion": "1.0.0"}),
              "index.json": canonical(index)}
    for d, b in blobs.items():
        layout["blobs/sha256/" + d.split(":")[1]] = b
    # `docker load` reads manifest.json; the OCI files beside it are what newer engines read.
    docker = [{"Config": "blobs/sha256/" + digest(config_bytes).split(":")[1],
               "RepoTags": [name],
               "Layers": ["blobs/sha256/" + digest(layer_gz).split(":")[1]]}]
    out = Path(a.out)
    oci = out / "oci"
    for p, b in layout.items():
        (oci / p).parent.mkdir(parents=True, exist_ok=True)
        (oci / p).write_bytes(b)
    archive = dict(layout, **{"manifest.json": canonical(docker)})
    with tarfile.open(out / "wlmap.tar", "w", format=tarfile.PAX_FORMAT) as tar:
        for p in sorted(archive):
            info = tarfile.TarInfo(p)
            info.size, info.mtime, info.mode = len(archive[p]), created, 0o644
            tar.addfile(info, io.BytesIO(archive[p]))
    summary = {"image": name, "manifest": digest(manifest_bytes), "config": digest(config_bytes),
               "layer": digest(layer_gz), "version": v["version"], "revision": v["revision"],
               "oci": str(oci), "archive": str(out / "wlmap.tar")}
    (out / "image.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
