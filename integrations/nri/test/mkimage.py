#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""mkimage.py OUT.tar NAME ROOTFS [ENTRYPOINT...]: an OCI image layout
archive of one uncompressed layer (ROOTFS as it is, owned by root), with
index.json naming it NAME (io.containerd.image.name), for
`ctr images import`.  Deterministic: no timestamps but the epoch."""
import hashlib
import io
import json
import os
import sys
import tarfile


def layer(root):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for d, dirs, files in os.walk(root):
            dirs.sort()
            for n in sorted(dirs) + sorted(files):
                p = os.path.join(d, n)
                ti = t.gettarinfo(p, os.path.relpath(p, root))
                ti.uid = ti.gid = 0
                ti.uname = ti.gname = "root"
                ti.mtime = 0
                if ti.isreg():
                    with open(p, "rb") as f:
                        t.addfile(ti, f)
                else:
                    t.addfile(ti)
    return buf.getvalue()


def blob(out, data):
    h = hashlib.sha256(data).hexdigest()
    ti = tarfile.TarInfo("blobs/sha256/" + h)
    ti.size = len(data)
    out.addfile(ti, io.BytesIO(data))
    return "sha256:" + h, len(data)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    dst, name, root, entry = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    lay = layer(root)
    with tarfile.open(dst, "w") as out:
        ldig, lsize = blob(out, lay)
        cfg = {"architecture": "amd64", "os": "linux",
               "config": {"Env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"],
                          "Entrypoint": entry or None, "WorkingDir": "/"},
               "rootfs": {"type": "layers", "diff_ids": [ldig]}}
        cdig, csize = blob(out, json.dumps(cfg, sort_keys=True).encode())
        man = {"schemaVersion": 2,
               "mediaType": "application/vnd.oci.image.manifest.v1+json",
               "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                          "digest": cdig, "size": csize},
               "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                           "digest": ldig, "size": lsize}]}
        mdig, msize = blob(out, json.dumps(man, sort_keys=True).encode())
        idx = {"schemaVersion": 2, "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": mdig, "size": msize,
            "annotations": {"io.containerd.image.name": name,
                            "org.opencontainers.image.ref.name": name.rsplit(":", 1)[-1]}}]}
        for n, d in (("oci-layout", {"imageLayoutVersion": "1.0.0"}), ("index.json", idx)):
            data = json.dumps(d).encode()
            ti = tarfile.TarInfo(n)
            ti.size = len(data)
            out.addfile(ti, io.BytesIO(data))


main()
