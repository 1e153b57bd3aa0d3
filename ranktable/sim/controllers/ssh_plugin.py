"""Volcano's `ssh` job plugin: a Secret `<job>-ssh` with one RSA key pair for the whole job.

As `pkg/controllers/job/plugins/ssh` does: `id_rsa` (PEM, PKCS#1), `id_rsa.pub`, `authorized_keys`
and a `config` naming every pod of the job; the pods mount it at `/root/.ssh` (mode 0600). In the
simulated pool the files are placed in the pod's home directory (`$HOME/.ssh`).
"""

from __future__ import annotations

import base64
import contextlib

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from ranktable.sim.controllers.common import Obj, owner_reference
from ranktable.sim.k8s import errors
from ranktable.sim.k8s.resources import SECRETS
from ranktable.sim.k8s.store import Store

KEYS = ("id_rsa", "id_rsa.pub", "authorized_keys", "config")


def secret_name(job: Obj) -> str:
    return f"{job['metadata']['name']}-ssh"


def _port(args: list[str]) -> int:
    for arg in args:
        if arg.startswith("--ssh-port="):
            with contextlib.suppress(ValueError):
                return int(arg.split("=", 1)[1])
    return 22


def ssh_config(job: Obj, port: int) -> str:
    """`StrictHostKeyChecking no` and a Host entry per pod (hostname `<job>-<task>-<i>.<job>`)."""
    name = job["metadata"]["name"]
    text = "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"
    for task in job["spec"].get("tasks") or []:
        template = (task.get("template") or {}).get("spec") or {}
        for i in range(int(task.get("replicas", 1))):
            host = template.get("hostname") or f"{name}-{task['name']}-{i}"
            subdomain = template.get("subdomain") or name
            text += f"Host {host}\n  HostName {host}.{subdomain}\n  Port {port}\n"
    return text


def key_pair() -> tuple[bytes, bytes]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private, public + b"\n"


def ensure_secret(store: Store, job: Obj) -> None:
    """Create the job's ssh Secret once (owned by the job, so it goes with it)."""
    meta = job["metadata"]
    if store.find(SECRETS, meta["namespace"], secret_name(job)) is not None:
        return
    private, public = key_pair()
    config = ssh_config(job, _port(job["spec"]["plugins"].get("ssh") or []))
    data = {"id_rsa": private, "id_rsa.pub": public, "authorized_keys": public, "config": config.encode()}
    with contextlib.suppress(errors.ApiError):  # created meanwhile
        store.create(
            SECRETS,
            {
                "metadata": {
                    "name": secret_name(job),
                    "namespace": meta["namespace"],
                    "ownerReferences": [owner_reference(job)],
                },
                "type": "Opaque",
                "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
            },
        )
