"""SSH to Notebook instances: verified connections, code sync with automatic upload, remote run.

Public API (other areas — the kernel provisioner, the server extension, the CLI — use only this):

Profiles and connections
    ``ProfileStore()``: profiles.json under RANKTABLE_HOME (mode 600): ``add(Profile)``, ``get(name)``,
        ``list_profiles()``, ``remove(name)``, ``resolve(name) -> Endpoint`` (merged with ~/.ssh/config).
    ``Profile(name, host, port=None, user=None, key_file=None, jump=None, remote_dir="~/work",
        sync=SyncSettings(upload="explicit", delete_remote=False, ignore=()), max_channels=8)``
    ``default_manager() -> ConnectionManager``: one per process. ``.get(name) -> Connection`` (lazy, cached:
        one transport per profile), ``.set_passphrase(key_file, pw)`` (memory only),
        ``.scan_host_key(name)``, ``.accept_host_key(name, "SHA256:...")``, ``.close(name=None)``.
    ``Connection``: ``.transport()`` the live transport (an idle one is probed with a real round trip and
        re-established when dead), ``.probe(timeout)``, ``.open_session() -> ChannelLease``,
        ``.open_forward(host, port) -> ChannelLease`` (``lease.channel``; ``lease.close()`` frees the
        slot; also a context manager yielding the channel), ``.sftp()`` (context manager; one client per
        thread), ``.run(cmd, stdin=, timeout=) -> ExecResult(exit_status, stdout, stderr)``,
        ``.remote_root()`` (absolute, created), ``.close()``. At most ``max_channels`` leases at once;
        waiting longer than ``channel_wait`` raises TooManyConnections.
Errors (``ranktable.remote.errors``, all ``RanktableError`` with ``reason`` and ``fix``)
    HostNotResolved, ConnectionRefused, ConnectTimeout, ConnectionLost, TooManyConnections, KeyNotAccepted,
    KeyFileError > (KeyPermissionsTooOpen, PassphraseRequired, WrongPassphrase), HostKeyError >
    (UnknownHostKey(.host_id, .key_type, .fingerprint), HostKeyChanged(.expected, .presented)),
    RemotePathError.
Sync (``ranktable.remote.sync``)
    ``Syncer(connection, local_root, settings=SyncSettings(), method="auto"|"tar"|"sftp", workers=4)``;
    ``.sync(dry_run=, force=, delete=, only=[rel paths], progress=callback(ProgressEvent)) -> SyncResult``
    (uploaded, deleted, conflicts[Conflict(path, reason)], remote_changed, kept_remote, adopted, unchanged,
    bytes, seconds, method, ``summary()``); ``.download(remote_path, local_path)``;
    ``.download_conflict(rel_path)``. Failures: ConnectionLost (nothing half-written; sync again).
Automatic upload (``ranktable.remote.autoupload``)
    ``AutoUploader(syncer, mode)``; ``post_save_hook(model, os_path, contents_manager)`` for
    ``FileContentsManager.post_save_hook`` (only enqueues; never raises); ``register_uploader(uploader)``.
Remote run (``ranktable.remote.run``)
    ``run_remote(connection, command=None, python_file=None, args=(), on_stdout=, on_stderr=, cancel=)``
    -> exit status; ``RemoteProcess`` for start / cancel (kills the remote process group) / wait.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ranktable.lazy import lazy_exports

if TYPE_CHECKING:
    from ranktable.remote.connection import ChannelLease, Connection, ExecResult
    from ranktable.remote.hostkeys import HostKeyStore, fingerprint
    from ranktable.remote.manager import ConnectionManager, default_manager
    from ranktable.remote.profiles import Endpoint, Profile, ProfileStore, SyncSettings

# Imported on first use (PEP 562): light commands (a CLI sync through the agent) never load paramiko.
_HOMES = {
    "ChannelLease": "connection",
    "Connection": "connection",
    "ExecResult": "connection",
    "HostKeyStore": "hostkeys",
    "fingerprint": "hostkeys",
    "ConnectionManager": "manager",
    "default_manager": "manager",
    "Endpoint": "profiles",
    "Profile": "profiles",
    "ProfileStore": "profiles",
    "SyncSettings": "profiles",
}


__getattr__ = lazy_exports(__name__, _HOMES, globals())


__all__ = [
    "ChannelLease",
    "Connection",
    "ConnectionManager",
    "Endpoint",
    "ExecResult",
    "HostKeyStore",
    "Profile",
    "ProfileStore",
    "SyncSettings",
    "default_manager",
    "fingerprint",
]
