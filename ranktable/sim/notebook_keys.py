"""Key material of the simulated Notebook instance: its persistent host key and the user's key pair.

Like the platform (a key pair bound to the instance, its ``.pem`` downloaded once), the simulator makes a
client key pair the first time it runs and authorises only that key; the host key persists so the entry
pinned in known_hosts stays valid across restarts.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from pathlib import Path

import paramiko
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519


def _write_private(path: Path, data: bytes) -> None:
    """Create a private key file with mode 600 from the start (never briefly world-readable)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    path.chmod(0o600)


def ensure_ed25519_key(path: Path, comment: str) -> str:
    """Make an OpenSSH-format ed25519 key at ``path`` (+ ``.pub``) unless it exists; return the pub line."""
    pub_path = path.with_name(path.name + ".pub")
    if not path.exists():
        private = ed25519.Ed25519PrivateKey.generate()
        pem = private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
        )
        _write_private(path, pem)
        pub = private.public_key().public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
        )
        pub_path.write_text(f"{pub.decode()} {comment}\n")
    if not pub_path.exists():
        key = paramiko.Ed25519Key(filename=str(path))
        pub_path.write_text(f"{key.get_name()} {key.get_base64()} {comment}\n")
    return pub_path.read_text().strip()


def authorized_blobs(path: Path) -> set[str]:
    """Base64 key blobs listed in an authorized_keys file (options-prefixed lines are not supported)."""
    blobs: set[str] = set()
    if not path.exists():
        return blobs
    for line in path.read_text().splitlines():
        parts = line.strip().split()
        if len(parts) >= 2 and not parts[0].startswith("#"):
            try:
                base64.b64decode(parts[1], validate=True)
            except ValueError:
                continue
            blobs.add(parts[1])
    return blobs


@dataclass(frozen=True)
class SimKeys:
    """Where the simulator keeps its keys (all under one state directory)."""

    state_dir: Path

    @property
    def host_key_path(self) -> Path:
        return self.state_dir / "ssh_host_ed25519_key"

    @property
    def client_key_path(self) -> Path:
        return self.state_dir / "sim-notebook.pem"

    @property
    def authorized_keys_path(self) -> Path:
        return self.state_dir / "authorized_keys"

    def ensure(self) -> None:
        """Create the host key, the client key pair and authorized_keys (with the client key) if missing."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.state_dir.chmod(0o700)
        ensure_ed25519_key(self.host_key_path, "ranktable-sim-notebook-host")
        client_pub = ensure_ed25519_key(self.client_key_path, "ranktable-sim-notebook-user")
        if not self.authorized_keys_path.exists():
            _write_private(self.authorized_keys_path, (client_pub + "\n").encode())

    def host_key(self) -> paramiko.PKey:
        return paramiko.Ed25519Key(filename=str(self.host_key_path))

    def host_key_line(self) -> tuple[str, str]:
        """(key type, base64 blob) of the host key, for a known_hosts entry."""
        key = self.host_key()
        return key.get_name(), key.get_base64()
