"""Connections by profile name: one ``Connection`` (one transport) per profile per process.

Passphrases given by the user are kept here, in memory only, keyed by key file, so a reconnect after a
dropped connection does not ask again.
"""

from __future__ import annotations

import socket
import threading

import paramiko

from ranktable.home import ranktable_home
from ranktable.remote.connection import Connection, open_socket
from ranktable.remote.errors import ConnectionLost, HostKeyError
from ranktable.remote.hostkeys import HostKeyStore, fingerprint
from ranktable.remote.profiles import Endpoint, ProfileStore


class ConnectionManager:
    def __init__(
        self,
        profiles: ProfileStore | None = None,
        host_keys: HostKeyStore | None = None,
        *,
        channel_wait: float = 30.0,
        connect_timeout: float = 15.0,
    ) -> None:
        self.profiles = profiles or ProfileStore()
        self.host_keys = host_keys or HostKeyStore(self.profiles.home / "known_hosts")
        self.channel_wait = channel_wait
        self.connect_timeout = connect_timeout
        self._passphrases: dict[str, str] = {}
        self._connections: dict[str, Connection] = {}
        self._lock = threading.Lock()

    def set_passphrase(self, key_file: str, passphrase: str) -> None:
        """Remember a key's passphrase for this process only (never written to disk)."""
        self._passphrases[key_file] = passphrase
        with self._lock:  # connections built before must pick it up
            for name, conn in list(self._connections.items()):
                if conn.endpoint.key_file == key_file and not conn.is_connected:
                    del self._connections[name]

    def get(self, name: str) -> Connection:
        """The (lazily connecting) connection of profile ``name``."""
        endpoint = self.profiles.resolve(name)  # raises if the profile was removed meanwhile
        with self._lock:
            conn = self._connections.get(name)
            if conn is not None and conn.endpoint != endpoint:  # the profile was edited: start afresh
                conn.close()
                conn = None
            if conn is None:
                conn = self._build(endpoint)
                self._connections[name] = conn
            return conn

    def _build(self, endpoint: Endpoint) -> Connection:
        jump = None
        if endpoint.jump is not None:
            existing = self._connections.get(endpoint.jump.profile)
            jump = existing or self._build(endpoint.jump)
            self._connections.setdefault(endpoint.jump.profile, jump)
        max_channels = 8
        if not endpoint.profile.startswith("jump:"):
            max_channels = self.profiles.get(endpoint.profile).max_channels
        return Connection(
            endpoint,
            host_keys=self.host_keys,
            passphrase=self._passphrases.get(endpoint.key_file or ""),
            jump=jump,
            max_channels=max_channels,
            channel_wait=self.channel_wait,
            connect_timeout=self.connect_timeout,
        )

    def scan_host_key(self, name: str) -> paramiko.PKey:
        """The host key the server of profile ``name`` presents (key exchange only, no login)."""
        conn = self.get(name)
        endpoint = conn.endpoint
        lease = conn.jump.open_forward(endpoint.host, endpoint.port) if conn.jump else None
        sock: socket.socket | paramiko.Channel = (
            lease.channel if lease else open_socket(endpoint, self.connect_timeout)
        )
        transport = paramiko.Transport(sock)
        try:
            transport.start_client(timeout=self.connect_timeout)
            return transport.get_remote_server_key()
        except (paramiko.SSHException, EOFError, OSError) as exc:
            raise ConnectionLost(
                f"key exchange with {endpoint.host_id} failed: {exc}", where=f"profile {name}", fix="retry"
            ) from exc
        finally:
            transport.close()
            if lease:
                lease.close()

    def accept_host_key(self, name: str, expected_fingerprint: str) -> str:
        """Save the server's host key if it matches the fingerprint the user checked; returns the host id."""
        key = self.scan_host_key(name)
        endpoint = self.get(name).endpoint
        # Any key that is not the recorded one is a change, whatever its type (the store refuses it).
        change_fix = (
            f"if the instance was recreated, replace it: ranktable ssh test {name} "
            "--replace-host-key NEW_FINGERPRINT"
        )
        self.host_keys.accept(endpoint.host_id, key, expected_fingerprint, change_fix=change_fix)
        return endpoint.host_id

    def replace_host_key(self, name: str, new_fingerprint: str) -> tuple[str, str, str]:
        """The instance was recreated: trust its new host key, only if the user typed its fingerprint.

        Never automatic: refused unless a *different* key is recorded (otherwise there is nothing to
        replace) and the server presents exactly ``new_fingerprint``. Returns (host id, old, new).
        """
        if not isinstance(new_fingerprint, str) or not new_fingerprint.strip().startswith("SHA256:"):
            raise HostKeyError(
                f"{new_fingerprint!r:.80} is not a SHA256 fingerprint",
                fix="paste the new fingerprint shown in the refusal (SHA256:...), after checking it",
            )
        key = self.scan_host_key(name)
        endpoint = self.get(name).endpoint
        known, _ = self.host_keys.lookup(endpoint.host_id)
        if not known:
            raise HostKeyError(
                f"no key is recorded for {endpoint.host_id}: nothing to replace",
                fix=f"accept it as a new host: ranktable ssh test {name} --accept-host-key FINGERPRINT",
            )
        if any(k.asbytes() == key.asbytes() for k in known.values()):
            raise HostKeyError(
                f"{endpoint.host_id} still presents its recorded key {fingerprint(key)}: nothing to replace",
                fix="connect normally",
            )
        old = ", ".join(f"{k.get_name()} {fingerprint(k)}" for k in known.values())
        self.host_keys.accept(endpoint.host_id, key, new_fingerprint, replace=True)
        self.close(name)
        return endpoint.host_id, old, fingerprint(key)

    def connected(self, name: str) -> bool:
        """Whether profile ``name`` has a live, host-key-verified transport now (no connecting, no probe)."""
        with self._lock:
            conn = self._connections.get(name)
        return conn is not None and conn.is_connected

    def close(self, name: str | None = None) -> None:
        with self._lock:
            names = [name] if name else list(self._connections)
            for n in names:
                conn = self._connections.pop(n, None)
                if conn is not None:
                    conn.close()


_default: ConnectionManager | None = None
_default_lock = threading.Lock()


def default_manager() -> ConnectionManager:
    """The process-wide manager (server extension, save hook, CLI) for the current RANKTABLE_HOME."""
    global _default
    home = ranktable_home()
    with _default_lock:
        if _default is not None and _default.profiles.home != home:
            _default.close()  # RANKTABLE_HOME changed (tests): never mix two homes' profiles
            _default = None
        if _default is None:
            _default = ConnectionManager(ProfileStore(home))
        return _default
