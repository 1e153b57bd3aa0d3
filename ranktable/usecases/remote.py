"""Notebook-instance use cases: SSH profiles, connection test, remote kernel, sync results, automatic upload.

The server extension, the magics and the CLI call these; the SSH work itself is ``ranktable.remote``'s.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ranktable.errors import InputError, RanktableError

if TYPE_CHECKING:
    from ranktable.remote.errors import HostKeyChanged, UnknownHostKey
    from ranktable.remote.manager import ConnectionManager
    from ranktable.remote.profiles import ProfileStore

AskPassphrase = Callable[[str, bool, Exception], str]  # (key file, a retry?, why) -> the passphrase


class Remote:
    """The remote use cases over one connection manager (one SSH transport per profile)."""

    def __init__(
        self,
        state_dir: str | None = None,
        *,
        default_upload: str = "explicit",
        default_delete: bool = False,
        log: logging.Logger | None = None,
        manager: ConnectionManager | None = None,
    ) -> None:
        self.state_dir = state_dir
        self.default_upload = default_upload
        self.default_delete = default_delete
        self.log = log or logging.getLogger("ranktable.remote")
        self._manager: ConnectionManager | None = manager
        self._forwards: Any = None  # ForwardRegistry, opened on first use
        self.uploads = AutoUploads(self)

    @property
    def manager(self) -> ConnectionManager:
        if self._manager is None:
            from ranktable.remote.manager import ConnectionManager, default_manager
            from ranktable.remote.profiles import ProfileStore

            if self.state_dir:
                self._manager = ConnectionManager(ProfileStore(Path(self.state_dir)))
            else:
                self._manager = default_manager()
        return self._manager

    @property
    def profiles(self) -> ProfileStore:
        return self.manager.profiles

    # -- profiles ---------------------------------------------------------------------------------------
    def list_profiles(self) -> dict[str, Any]:
        """The profiles, and the stored ones that no longer validate (listed, never fatal)."""
        invalid = self.profiles.invalid_profiles()
        return {
            # `working_dir`: where sync and uploads go (the shared folder unless a remote_dir was given);
            # `connected`: a live transport now (a test, sync or kernel connected it)
            "profiles": [
                {**p.to_json(), "working_dir": p.working_dir, "connected": self.manager.connected(p.name)}
                for p in self.profiles.list_profiles()
            ],
            "invalid": [{"name": n, **exc.to_json()} for n, exc in sorted(invalid.items())],
        }

    def add_profile(self, body: Mapping[str, Any]) -> dict[str, Any]:
        from ranktable.remote.profiles import SyncSettings, profile_from_request

        defaults = SyncSettings(upload=self.default_upload, delete_remote=self.default_delete)
        return self.profiles.add(profile_from_request(dict(body), defaults)).to_json()

    def update_profile(self, name: str, body: Mapping[str, Any]) -> dict[str, Any]:
        from ranktable.remote.profiles import patched_profile

        updated = patched_profile(self.profiles.get(name), dict(body))
        self.profiles.add(updated, replace_existing=True)
        self.manager.close(name)
        return updated.to_json()

    def register_instance(
        self,
        name: str,
        *,
        host: str,
        port: int,
        user: str,
        key_file: str,
        host_key: Any,
        shared: Any = None,
    ) -> dict[str, Any]:
        """Add/replace profile `name` for an instance we started ourselves (the simulated Notebook
        instance) and pin the host key it gave us: we generated that key and hold the listening port, so
        there is no third party to verify (no fingerprint prompt). A cached connection is dropped (it
        would still point at an older port)."""
        from ranktable.remote.hostkeys import HostKeyStore, fingerprint, host_id
        from ranktable.remote.profiles import DEFAULT_REMOTE_DIR, Profile

        profile = Profile(
            name=name, host=host, port=port, user=user, key_file=key_file, remote_dir=DEFAULT_REMOTE_DIR,
            shared=shared,
        )  # fmt: skip
        saved = self.profiles.add(profile, replace_existing=True)
        known_hosts = HostKeyStore(self.profiles.home / "known_hosts")
        known_hosts.accept(host_id(host, port), host_key, fingerprint(host_key), replace=True)
        self.manager.close(name)
        return saved.to_json()

    def remove_profile(self, name: str) -> None:
        self.profiles.remove(name)
        self.manager.close(name)

    # -- connection --------------------------------------------------------------------------------------
    def connected(self, name: str, ask_passphrase: AskPassphrase | None = None) -> Any:
        """The profile's connection. A key that needs its passphrase is asked for through
        `ask_passphrase(key_file, retry)` (kept in memory only), at most three times; without it the
        PassphraseRequired error is raised."""
        from ranktable.remote.errors import PassphraseRequired, WrongPassphrase

        for attempt in range(3):
            conn = self.manager.get(name)
            try:
                return conn.connect()
            except (PassphraseRequired, WrongPassphrase) as exc:
                if ask_passphrase is None:
                    raise
                key = conn.endpoint.key_file or ""
                retry = bool(attempt) and isinstance(exc, WrongPassphrase)
                self.manager.set_passphrase(key, ask_passphrase(key, retry, exc))
        raise InputError("three wrong passphrases", where=f"profile {name}", fix="check the key's passphrase")

    def replace_host_key(self, name: str, fingerprint: str) -> tuple[str, str, str]:
        """Trust a recreated instance's new key, typed or pasted: (host, old fingerprint, new)."""
        host_id, old, new = self.manager.replace_host_key(name, fingerprint)
        return host_id, old, new

    def accept_host_key(self, name: str, fingerprint: str) -> str:
        """Trust an unknown host's key, checked by its fingerprint: the host id."""
        host_id = str(self.manager.accept_host_key(name, fingerprint))
        self.manager.close(name)
        return host_id

    def check_connection(
        self, name: str, *, ask_passphrase: AskPassphrase | None = None, exec_check: bool = False
    ) -> dict[str, Any]:
        """Connect and probe (`exec_check`: run a command, timed, and resolve the remote folder). An unknown
        or changed host key, or a key needing a passphrase nobody can ask for, comes back as a status with
        what the user must check; other failures are raised."""
        from ranktable.remote.errors import HostKeyChanged, PassphraseRequired, UnknownHostKey

        try:
            conn = self.connected(name, ask_passphrase)
            if exec_check:
                started = time.perf_counter()
                done = conn.run("echo ok")
                return {
                    "status": "ok" if done.exit_status == 0 else "error",
                    "message": f"connected to {conn.endpoint.host_id}",
                    "round_trip_ms": (time.perf_counter() - started) * 1000,
                    "remote_dir": conn.remote_root(),
                    "user": conn.endpoint.user,
                    "host": conn.endpoint.host_id,
                }
            alive = conn.probe()
        except UnknownHostKey as exc:
            return _host_key_status("unknown-host-key", exc, fingerprint=exc.fingerprint)
        except HostKeyChanged as exc:
            return _host_key_status("host-key-changed", exc, recorded=exc.expected, presented=exc.presented)
        except PassphraseRequired as exc:
            if ask_passphrase is not None:
                raise
            return {"status": "passphrase-required", "message": exc.message}
        return {
            "status": "ok" if alive else "error",
            "message": f"connected to {conn.endpoint.host_id}"
            if alive
            else "connected, but the probe failed",
        }

    def test_connection(
        self,
        name: str,
        *,
        passphrase: str | None = None,
        accept_host_key: str | None = None,
        replace_host_key: str | None = None,
    ) -> dict[str, Any]:
        """The panel's and the magics' test: `check_connection` with every failure as a status."""
        if replace_host_key:
            self.replace_host_key(name, replace_host_key)
        if passphrase:
            profile = self.profiles.get(name)
            if profile.key_file:
                self.manager.set_passphrase(profile.key_file, passphrase)
        if accept_host_key:
            self.accept_host_key(name, accept_host_key)
        self.manager.get(name)  # an unknown profile is an error (404), not a status
        try:
            return self.check_connection(name)
        except RanktableError as exc:
            return {"status": "error", "message": exc.message, "reason": exc.reason, "fix": exc.fix}

    def install_kernel(
        self, profile: str, python: str | None = None, display_name: str | None = None
    ) -> dict[str, Any]:
        from ranktable.remote.kernelspec import install_kernelspec

        self.profiles.get(profile)  # NotFoundError says how to add it
        options: dict[str, Any] = {"python": python} if python else {}
        if display_name:
            options["display_name"] = display_name
        name = install_kernelspec(profile, **options)
        return {"kernel_name": name, "display_name": display_name or f"Python ({profile})"}

    # -- remote commands ---------------------------------------------------------------------------------
    def process(self, profile: str, command: str, on_stdout: Any, on_stderr: Any) -> Any:
        """A started remote command on the profile's (connected) transport: `wait()`, `cancel()`."""
        from ranktable.remote.run import RemoteProcess

        return RemoteProcess(
            self.manager.get(profile), command, on_stdout=on_stdout, on_stderr=on_stderr
        ).start()

    def run_command(self, profile: str, command: str, on_stdout: Any, on_stderr: Any, cancel: Any) -> int:
        """Run `command` in the remote folder until it ends or `cancel` is set: its exit status."""
        from ranktable.remote.run import run_remote

        return int(
            run_remote(
                self.manager.get(profile), command, on_stdout=on_stdout, on_stderr=on_stderr, cancel=cancel
            )
        )

    # -- port forwards -----------------------------------------------------------------------------------
    @property
    def forwards(self) -> Any:
        if self._forwards is None:
            from ranktable.remote.forwards import ForwardRegistry

            self._forwards = ForwardRegistry(self.manager)
        return self._forwards

    def list_forwards(self) -> list[dict[str, Any]]:
        """This process's forwards, then those other ranktable processes of the user hold (CLI, kernels)."""
        from ranktable.remote.forwards import other_forwards

        return [f.to_json() for f in self.forwards.list()] + other_forwards()

    def open_forward(
        self, profile: str, remote_port: Any, local_port: Any = 0, *, private: bool = False
    ) -> dict[str, Any]:
        """``private``: on a Unix socket only this user reaches (the server's proxy path serves it)."""
        self.profiles.get(profile)
        return dict(self.forwards.open(profile, remote_port, local_port or 0, private=private).to_json())

    def forward_socket(self, forward_id: str) -> tuple[str, int]:
        """The Unix socket of this process's private forward ``forward_id`` and its remote port (404 if
        there is none: unknown, closed, another process's or a TCP one)."""
        from ranktable.errors import NotFoundError

        forward = self.forwards.get(forward_id)
        if not forward.socket:
            raise NotFoundError(
                f"forward {forward_id!r} is a TCP forward (http://127.0.0.1:{forward.local_port}/)",
                where="forward",
                fix="open it without local_port to reach it through the server",
            )
        return forward.socket, forward.remote_port

    def close_forward(self, forward_id: str) -> dict[str, Any]:
        if "@" in forward_id:  # another process's forward: ask it to close
            from ranktable.remote.forwards import close_other

            return close_other(forward_id)
        return dict(self.forwards.close(forward_id).to_json())

    # -- remote kernels that outlive the Jupyter server ----------------------------------------------------
    async def attach_recorded_kernels(self, kernel_manager: Any) -> list[str]:
        """At server start: take back every recorded remote kernel that still runs."""
        from ranktable.remote.kernel_attach import attach_recorded_kernels

        return await attach_recorded_kernels(kernel_manager)

    def detach_kernels(self, kernel_manager: Any) -> list[str]:
        """At server stop: hand the remote kernels over instead of shutting them down."""
        from ranktable.remote.kernel_attach import detach_remote_kernels

        return detach_remote_kernels(kernel_manager)

    def list_kernels(self, kernel_manager: Any) -> list[dict[str, Any]]:
        from ranktable.remote.kernel_attach import list_remote_kernels

        return list_remote_kernels(kernel_manager)

    async def attach_kernel(self, kernel_manager: Any, kernel_id: str) -> dict[str, Any]:
        from ranktable.errors import NotFoundError
        from ranktable.remote.kernel_attach import attach_remote_kernel
        from ranktable.remote.kernel_records import KERNEL_ID, KernelRecords

        records = KernelRecords()
        record = records.load(kernel_id) if KERNEL_ID.match(kernel_id) else None
        if record is None:
            raise NotFoundError(
                f"no remote kernel {kernel_id!r}", where="kernel", fix="list the remote kernels"
            )
        if not await attach_remote_kernel(kernel_manager, record):
            records.remove(kernel_id)
            raise NotFoundError(
                f"remote kernel {kernel_id} is no longer running", where="kernel", fix="start a new one"
            )
        return {"kernel_id": kernel_id, "attached": True}

    async def shutdown_kernel(self, kernel_manager: Any, kernel_id: str) -> dict[str, Any]:
        from ranktable.errors import NotFoundError
        from ranktable.remote.kernel_attach import shutdown_remote_kernel
        from ranktable.remote.kernel_records import KERNEL_ID

        if not KERNEL_ID.match(kernel_id):
            raise NotFoundError(
                f"no remote kernel {kernel_id!r}", where="kernel", fix="list the remote kernels"
            )
        await shutdown_remote_kernel(kernel_manager, kernel_id)
        return {"kernel_id": kernel_id, "shut_down": True}

    # -- sync ----------------------------------------------------------------------------------------------
    def syncer(self, profile_name: str, local: Path, *, delete_remote: bool = False) -> Any:
        """The sync engine between `local` and the profile's remote folder (`delete_remote`: also delete
        remote files gone locally, whatever the profile says)."""
        from dataclasses import replace

        from ranktable.remote.sync import Syncer

        settings = self.profiles.get(profile_name).sync
        if delete_remote:
            settings = replace(settings, delete_remote=True)
        return Syncer(self.manager.get(profile_name), local, settings, home=self.profiles.home)

    def watch_uploads(self, syncer: Any, on_result: Any, debounce: float) -> Any:
        """Upload every change under the syncer's folder as it happens (stop it with `stop()`)."""
        from ranktable.remote.autoupload import AutoUploader

        return AutoUploader(syncer, "always", debounce=debounce, on_result=on_result).start(watch=True)

    def save_hook(self) -> Callable[..., None] | None:
        """Jupyter's post-save hook feeding the automatic uploads (None when the SSH layer is missing)."""
        try:
            from ranktable.remote.autoupload import post_save_hook
        except ImportError:
            return None
        return post_save_hook

    def close(self) -> None:
        self.uploads.stop()
        if self._forwards is not None:
            self._forwards.close_all()
        if self._manager is not None:
            self._manager.close()


def _host_key_status(
    status: str, exc: UnknownHostKey | HostKeyChanged, **fingerprints: str
) -> dict[str, Any]:
    """A refused host key as the panel, the magics and `ssh test` show it: the host, its key type, and
    the fingerprint(s) the user must check before trusting it."""
    return {
        "status": status,
        "message": exc.message,
        "host": exc.host_id,
        "key_type": exc.key_type,
        **fingerprints,
    }


def sync_result_json(result: Any) -> dict[str, Any]:
    """A SyncResult as the panel shows it: counts, the conflicts and the one-line summary."""
    return {
        "uploaded": len(result.uploaded),
        "deleted": len(result.deleted),
        "unchanged": result.unchanged,
        "bytes": result.bytes,
        "seconds": result.seconds,
        "method": result.method,
        "dry_run": result.dry_run,
        "conflicts": [{"path": c.path, "reason": c.reason} for c in result.conflicts],
        "remote_changed": list(result.remote_changed),
        "summary": result.summary(),
    }


class AutoUploads:
    """One AutoUploader per profile whose mode is not `never` and whose local folder is known."""

    def __init__(self, remote: Remote) -> None:
        self.remote = remote
        self._uploaders: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []

    def add_listener(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call `listener()` (from any thread) whenever `status()` may have changed; returns the remover."""
        self._listeners.append(listener)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return remove

    def _changed(self) -> None:
        for listener in list(self._listeners):
            try:
                listener()
            except Exception:
                self.remote.log.exception("ranktable: automatic upload listener failed")

    def _local_dirs_file(self) -> Path:
        return self.remote.profiles.home / "panel-local-dirs.json"

    def local_dirs(self) -> dict[str, str]:
        try:
            data = json.loads(self._local_dirs_file().read_text())
        except (OSError, ValueError):
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def remember(self, profile: str, local: Path) -> None:
        """The folder last synced to a profile: where saves are picked up for automatic upload."""
        from ranktable.remote.state import write_private_json

        dirs = self.local_dirs()
        if dirs.get(profile) != str(local):
            dirs[profile] = str(local)
            write_private_json(self._local_dirs_file(), dirs)
            self.refresh()

    def refresh(self) -> None:
        """(Re)start the uploaders from the profiles and the remembered folders."""
        from ranktable.remote.autoupload import AutoUploader, register_uploader

        with self._lock:
            self._stop_all()
            dirs = self.local_dirs()
            for profile in self.remote.profiles.list_profiles():
                local = dirs.get(profile.name)
                if profile.sync.upload == "never" or not local or not Path(local).is_dir():
                    continue
                try:
                    uploader = AutoUploader(
                        self.remote.syncer(profile.name, Path(local)),
                        profile.sync.upload,
                        on_change=self._changed,
                    )
                except RanktableError as exc:
                    self.remote.log.warning(
                        "ranktable: no automatic upload for %s: %s", profile.name, exc.message
                    )
                    continue
                register_uploader(uploader.start())
                self._uploaders[profile.name] = uploader
        self._changed()

    def synced(self, profile: str, local: Path, result: Any) -> None:
        """An explicit sync of `local` to `profile` finished: its uploader (same folder) counts it."""
        with self._lock:
            uploader = self._uploaders.get(profile)
        if uploader is not None and uploader.syncer.local_root == local.resolve():
            uploader.record_sync(result)

    def status(self) -> dict[str, Any]:
        with self._lock:
            return {name: u.status() for name, u in self._uploaders.items()}

    def stop(self) -> None:
        with self._lock:
            self._stop_all()

    def _stop_all(self) -> None:
        if not self._uploaders:
            return
        from ranktable.remote.autoupload import unregister_uploader

        for uploader in self._uploaders.values():
            unregister_uploader(uploader)
            uploader.stop()
        self._uploaders = {}


# -- the connection agent (a per-user process holding established connections) ----------------------------
def agent_status() -> str:
    """Whether the user's connection agent runs, in one line."""
    from ranktable.remote import agent

    try:
        for reply in agent.request({"op": "ping"}, start=False):
            return f"agent running (pid {reply['result']['pid']}) on {agent.socket_path()}"
    except (agent.AgentUnavailable, OSError) as exc:
        return f"no agent running ({exc})"
    return "no agent running"


def stop_agent() -> bool:
    from ranktable.remote import agent

    return agent.stop()


def agent_sync(message: dict[str, Any], on_progress: Callable[[dict[str, Any]], None] | None) -> Any:
    """A sync done by the agent (an established connection: no login per run); None when the agent
    cannot be used (turned off or unreachable): then the caller syncs itself."""
    from ranktable.remote import agent

    if not agent.enabled():
        return None
    try:
        return agent.call({"op": "sync", **message}, on_progress)
    except (agent.AgentUnavailable, OSError):
        return None
