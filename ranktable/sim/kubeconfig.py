"""The kubeconfig the pool writes for its clients (token auth, TLS on 127.0.0.1 with our own CA, mode 600)."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import yaml

from ranktable.sim.paths import CONTEXT


def kubeconfig_data(url: str, token: str, ca_pem: bytes, context: str = CONTEXT) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": context,
                "cluster": {"server": url, "certificate-authority-data": base64.b64encode(ca_pem).decode()},
            }
        ],
        "users": [{"name": f"{context}-user", "user": {"token": token}}],
        "contexts": [
            {
                "name": context,
                "context": {"cluster": context, "user": f"{context}-user", "namespace": "default"},
            }
        ],
        "current-context": context,
        "preferences": {},
    }


def write_kubeconfig(path: Path, url: str, token: str, ca_pem: bytes, context: str = CONTEXT) -> None:
    """Write atomically, readable by the owner only (it holds the bearer token)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        yaml.safe_dump(kubeconfig_data(url, token, ca_pem, context), fh, sort_keys=False)
    os.chmod(tmp, 0o600)
    tmp.replace(path)
