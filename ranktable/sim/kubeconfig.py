"""The kubeconfig the pool writes for its clients (token auth, TLS on 127.0.0.1 with our own CA, mode 600)."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Iterable
from pathlib import Path

import yaml

from ranktable.sim.paths import CONTEXT


def kubeconfig_data(
    url: str, token: str, ca_pem: bytes, context: str = CONTEXT, user: str = "", namespace: str = "default"
) -> dict[str, object]:
    """`user`: a team member's name (`sim start --user`), whose context works in `namespace`."""
    user_entry = user or f"{context}-user"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": context,
                "cluster": {"server": url, "certificate-authority-data": base64.b64encode(ca_pem).decode()},
            }
        ],
        "users": [{"name": user_entry, "user": {"token": token}}],
        "contexts": [
            {
                "name": context,
                "context": {"cluster": context, "user": user_entry, "namespace": namespace},
            }
        ],
        "current-context": context,
        "preferences": {},
    }


def write_kubeconfig(
    path: Path,
    url: str,
    token: str,
    ca_pem: bytes,
    context: str = CONTEXT,
    user: str = "",
    namespace: str = "default",
) -> None:
    """Write atomically, readable by the owner only (it holds the bearer token)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        yaml.safe_dump(kubeconfig_data(url, token, ca_pem, context, user, namespace), fh, sort_keys=False)
    os.chmod(tmp, 0o600)
    tmp.replace(path)


def write_user_kubeconfigs(
    users: Iterable[tuple[str, str]],
    path_of: Callable[[str], Path],
    url: str,
    tokens: dict[str, str],
    ca_pem: bytes,
    context: str = CONTEXT,
) -> None:
    """A kubeconfig per team member, (name, namespace) each (`sim start --user NAME`): their token."""
    for name, namespace in users:
        write_kubeconfig(path_of(name), url, tokens[name], ca_pem, context, name, namespace)
