"""Host-key verification: our own known_hosts under RANKTABLE_HOME plus the user's ``~/.ssh/known_hosts``.

An unknown host raises ``UnknownHostKey`` carrying the SHA256 fingerprint; the key is saved only when the
user accepts that exact fingerprint. A changed key raises ``HostKeyChanged``. Never AutoAdd, never Warning.
"""

from __future__ import annotations

import base64
import hashlib
import os
import threading
from pathlib import Path

import paramiko

from ranktable.home import ranktable_home
from ranktable.remote.errors import HostKeyChanged, HostKeyError, UnknownHostKey


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH's ``SHA256:<base64 without padding>`` fingerprint (what ``ssh`` and ``ssh-keygen -l`` show)."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def host_id(host: str, port: int) -> str:
    return host if port == 22 else f"[{host}]:{port}"


class HostKeyStore:
    """Reads our known_hosts and the user's; writes only ours (mode 600)."""

    _lock = threading.Lock()

    def __init__(self, path: Path | None = None, user_known_hosts: Path | None = None) -> None:
        self.path = path or ranktable_home() / "known_hosts"
        env = os.environ.get("RANKTABLE_USER_KNOWN_HOSTS")
        self.user_path = user_known_hosts or Path(env or "~/.ssh/known_hosts").expanduser()

    def _load(self, path: Path) -> paramiko.HostKeys:
        keys = paramiko.HostKeys()
        if path.is_file():
            keys.load(str(path))
        return keys

    def lookup(self, hid: str) -> tuple[dict[str, paramiko.PKey], Path]:
        """Known keys for ``hid`` by key type, and the file they come from (ours first)."""
        for path in (self.path, self.user_path):
            found = self._load(path).lookup(hid)
            if found:
                return {kt: found[kt] for kt in found}, path
        return {}, self.path

    def check(self, hid: str, key: paramiko.PKey, *, accept_hint: str | None = None) -> None:
        """Raise unless ``key`` is the recorded key for ``hid``."""
        known, source = self.lookup(hid)
        if not known:
            raise UnknownHostKey(hid, key.get_name(), fingerprint(key), accept_hint=accept_hint)
        same_type = known.get(key.get_name())
        if same_type is not None and same_type.asbytes() == key.asbytes():
            return
        if same_type is None and not any(k.asbytes() == key.asbytes() for k in known.values()):
            # The server offered a key type we have no record of, while others are recorded: still a change.
            recorded = ", ".join(f"{k.get_name()} {fingerprint(k)}" for k in known.values())
            raise HostKeyChanged(hid, key.get_name(), recorded, fingerprint(key), str(source))
        if same_type is not None:
            raise HostKeyChanged(hid, key.get_name(), fingerprint(same_type), fingerprint(key), str(source))

    def accept(
        self,
        hid: str,
        key: paramiko.PKey,
        expected_fingerprint: str,
        *,
        replace: bool = False,
        change_fix: str | None = None,
    ) -> None:
        """Record ``key`` for ``hid``, but only if it matches the fingerprint the user checked.

        ``replace``: drop every key recorded for ``hid`` in our file first (the instance was recreated);
        ours is consulted before ``~/.ssh/known_hosts``, so a stale line there no longer matters.
        Without it, a key beside another recorded one (of any type) is refused, with ``change_fix``.
        """
        presented = fingerprint(key)
        if expected_fingerprint.strip() != presented:
            raise HostKeyError(
                f"the server {hid} presents {key.get_name()} {presented}, not {expected_fingerprint.strip()}",
                fix="check the fingerprint again; nothing was saved",
            )
        if not replace:
            self._refuse_beside_another(hid, key, change_fix)
        with self._lock:
            keys = self._load(self.path)
            while replace:  # each ``del`` drops one line for the host (hashed names included)
                try:
                    del keys[hid]
                except KeyError:
                    break
            keys.add(hid, key.get_name(), key)
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            tmp = self.path.with_name(f".{self.path.name}.tmp")
            keys.save(str(tmp))
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)

    def _refuse_beside_another(self, hid: str, key: paramiko.PKey, change_fix: str | None) -> None:
        """Pinned per host, whatever the type: accepting a key while another (of any type) is recorded
        would bypass the deliberate replace step, so it is refused."""
        known, source = self.lookup(hid)
        if known and not any(k.asbytes() == key.asbytes() for k in known.values()):
            recorded = ", ".join(f"{k.get_name()} {fingerprint(k)}" for k in known.values())
            raise HostKeyError(
                f"{hid} already has a recorded host key ({recorded}, in {source}); the server now presents "
                f"{key.get_name()} {fingerprint(key)}",
                fix=(
                    change_fix
                    or "if the instance was really recreated, replace it with --replace-host-key "
                    "NEW_FINGERPRINT"
                )
                + "; nothing was saved",
            )

    def record_stamp(self) -> tuple[tuple[int, int, int] | None, ...]:
        """Cheap change detector of both files (mtime, size, inode): a cached transport re-checks its key when
        this moves."""
        stamps: list[tuple[int, int, int] | None] = []
        for path in (self.path, self.user_path):
            try:
                st = path.stat()
            except OSError:
                stamps.append(None)
            else:
                stamps.append((st.st_mtime_ns, st.st_size, st.st_ino))
        return tuple(stamps)

    def still_trusted(self, hid: str, key: paramiko.PKey) -> bool:
        """Is ``key`` (the one a live transport verified) still among the keys recorded for ``hid``?"""
        known, _ = self.lookup(hid)
        return any(k.asbytes() == key.asbytes() for k in known.values())


class VerifyingPolicy(paramiko.MissingHostKeyPolicy):
    """Unknown host -> ``UnknownHostKey`` with the fingerprint (paramiko itself raises on a changed key)."""

    def __init__(self, store: HostKeyStore, accept_hint: str | None = None) -> None:
        self.store = store
        self.accept_hint = accept_hint

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        # paramiko only calls us when no file holds ``hostname``; re-check ours to report a changed type too.
        self.store.check(hostname, key, accept_hint=self.accept_hint)
