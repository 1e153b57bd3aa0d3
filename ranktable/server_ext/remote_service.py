"""`/ranktable/profiles`, `/kernels` and the sync, download and run operations: JSON in, a remote use case."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ranktable.errors import InputError, RanktableError
from ranktable.server_ext.hub import Emit, OpFunction
from ranktable.usecases.remote import Remote, sync_result_json

if TYPE_CHECKING:
    from ranktable.server_ext.services import Services

UPLOAD_STATUS_IDLE_S = 10.0  # the uploads channel also re-reads the status this often without a change


class RemoteService:
    def __init__(self, services: Services) -> None:
        self.services = services
        config = services.config
        self.usecases = Remote(
            config.state_dir or None,
            default_upload=config.sync_mode,
            default_delete=config.sync_delete,
            log=services.log,
        )

    def list_profiles(self) -> dict[str, Any]:
        """The profiles, each with `local_dir`: the folder last synced to it, relative to the Jupyter root."""
        listing = self.usecases.list_profiles()
        remembered = self.usecases.uploads.local_dirs()
        for profile in listing["profiles"]:
            profile["local_dir"] = self._relative_to_root(remembered.get(profile["name"]))
        return listing

    def _relative_to_root(self, local: str | None) -> str | None:
        """A remembered folder as the panel shows it ("." for the root); None when unknown or now outside."""
        if not local:
            return None
        relative = os.path.relpath(local, self.services.root_dir)
        if relative == os.pardir or relative.startswith(os.pardir + os.sep):
            return None
        return relative.replace(os.sep, "/")

    def add_profile(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.usecases.add_profile(body)

    def update_profile(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        local_dir = _local_dir(body, default=None)
        local = self.services.local_path(local_dir, "local_dir") if local_dir else None
        updated = self.usecases.update_profile(name, {k: v for k, v in body.items() if k != "local_dir"})
        if local is not None:
            self.usecases.uploads.remember(name, local)
        self.usecases.uploads.refresh()
        return updated

    def remove_profile(self, name: str) -> None:
        self.usecases.remove_profile(name)

    def test_profile(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        accept = _fingerprint(body, "accept_host_key", "the fingerprint shown to the user")
        replacing = _fingerprint(body, "replace_host_key", "the new fingerprint typed by the user")
        passphrase = body.get("passphrase")
        if passphrase is not None and not isinstance(passphrase, str):
            raise InputError("must be a string (the key's passphrase)", where="passphrase")
        return self.usecases.test_connection(
            name,
            passphrase=str(passphrase) if passphrase else None,
            accept_host_key=accept or None,
            replace_host_key=replacing or None,
        )

    def list_forwards(self) -> dict[str, Any]:
        return {"forwards": [self._with_base_url(f) for f in self.usecases.list_forwards()]}

    def open_forward(self, body: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(body) - {"profile", "remote_port", "local_port"})
        if unknown:
            raise InputError(f"unknown field(s) {', '.join(unknown)}", where=unknown[0])
        local_port = body.get("local_port")
        # without a local port asked for, a Unix socket only this user reaches, served at `proxy_path`
        opened = self.usecases.open_forward(
            _name(body, "profile"), body.get("remote_port"), local_port, private=local_port is None
        )
        return self._with_base_url(opened)

    def _with_base_url(self, forward: dict[str, Any]) -> dict[str, Any]:
        """A proxied forward's `url`: its authenticated path under the server's base URL."""
        if forward.get("proxy_path"):
            return {**forward, "url": self.services.base_url.rstrip("/") + forward["proxy_path"]}
        return forward

    def forward_socket(self, forward_id: str) -> tuple[str, int]:
        return self.usecases.forward_socket(forward_id)

    def close_forward(self, forward_id: str) -> dict[str, Any]:
        return self._with_base_url(self.usecases.close_forward(forward_id))

    def list_remote_kernels(self, kernel_manager: Any) -> dict[str, Any]:
        return {"kernels": self.usecases.list_kernels(kernel_manager)}

    def install_kernel(self, profile: str, body: dict[str, Any]) -> dict[str, Any]:
        python = body.get("python")
        if python is not None and not isinstance(python, str):
            raise InputError("must be a string (the remote Python path)", where="python")
        return self.usecases.install_kernel(profile, python or None)

    # -- operations (run on the hub, followed on the stream) -----------------------------------------------
    def prepare_sync(self, body: dict[str, Any]) -> tuple[str, str, OpFunction]:
        profile = _name(body, "profile")
        local = self.services.local_path(_local_dir(body), "local_dir")
        syncer = self.usecases.syncer(profile, local)
        force = body.get("force", False)
        only: list[str] | None = None
        if isinstance(force, list):
            if not all(isinstance(p, str) for p in force):
                raise InputError("must be a list of relative paths", where="force")
            only, force = (force or None), bool(force)
        elif not isinstance(force, bool):
            raise InputError("must be true/false or a list of paths to overwrite", where="force")
        delete = body.get("delete")
        if delete is not None and not isinstance(delete, bool):
            raise InputError("must be true or false", where="delete")
        dry_run = body.get("dry_run", False)
        if not isinstance(dry_run, bool):
            raise InputError("must be true or false", where="dry_run")
        self.usecases.uploads.remember(profile, local)

        def run(emit: Emit, cancel: threading.Event) -> Any:
            result = syncer.sync(
                dry_run=dry_run, force=force, delete=delete, only=only, progress=progress_emitter(emit)
            )
            for conflict in result.conflicts:
                emit({"type": "conflict", "path": conflict.path, "reason": conflict.reason})
            if not dry_run:
                self.usecases.uploads.synced(profile, local, result)
            return sync_result_json(result)

        return "sync", f"sync {os.path.relpath(local, self.services.root_dir)} -> {profile}", run

    def prepare_download(self, body: dict[str, Any]) -> tuple[str, str, OpFunction]:
        """Fetch a remote path into the Jupyter root, or resolve a sync conflict in the remote's favour."""
        root = self.services.root_dir
        profile = _name(body, "profile")
        conflict = body.get("conflict")
        if conflict is not None:
            if not isinstance(conflict, str) or not conflict:
                raise InputError("must be the conflicting path from the sync", where="conflict")
            local_dir = self.services.local_path(_local_dir(body), "local_dir")
            syncer = self.usecases.syncer(profile, local_dir)

            def resolve(emit: Emit, cancel: threading.Event) -> Any:
                path = syncer.download_conflict(conflict)
                return {"files": 1, "local_path": os.path.relpath(path, root), "conflict": conflict}

            return "download", f"download {profile}:{conflict} (conflict)", resolve
        remote_path = body.get("remote_path")
        if not isinstance(remote_path, str) or not remote_path.strip():
            raise InputError("is required", where="remote_path", fix="a path relative to the remote folder")
        local_path = body.get("local_path")
        if local_path is not None and not isinstance(local_path, str):
            raise InputError("must be a string (a path relative to the Jupyter root)", where="local_path")
        local = self.services.local_path(local_path or remote_path, "local_path")
        syncer = self.usecases.syncer(profile, Path(root))

        def run(emit: Emit, cancel: threading.Event) -> Any:
            files = syncer.download(remote_path, local, progress=progress_emitter(emit))
            return {"files": len(files), "local_path": os.path.relpath(local, root)}

        return "download", f"download {profile}:{remote_path}", run

    def prepare_run(self, body: dict[str, Any]) -> tuple[str, str, OpFunction]:
        profile = _name(body, "profile")
        self.usecases.profiles.get(profile)
        command = body.get("command")
        if not isinstance(command, str) or not command.strip():
            raise InputError(
                "is required", where="command", fix="the shell command to run in the remote folder"
            )
        remote = self.usecases

        def run(emit: Emit, cancel: threading.Event) -> Any:
            def out(stream: str) -> Callable[[str], None]:
                def send(text: str) -> None:
                    emit({"type": "output", "stream": stream, "text": text})

                return send

            status = remote.run_command(profile, command, out("stdout"), out("stderr"), cancel)
            return {"exit_status": status}

        return "run", f"{profile}: {command}", run

    # -- automatic upload -----------------------------------------------------------------------------------
    def post_save_hook(self) -> Callable[..., None] | None:
        """The SSH layer's save hook (it only enqueues), fed by one AutoUploader per profile in use."""
        post_save_hook = self.usecases.save_hook()
        if post_save_hook is None:
            return None
        try:
            self.usecases.uploads.refresh()
        except RanktableError as exc:
            self.services.log.warning("ranktable: automatic upload disabled: %s", exc.message)
        return post_save_hook

    def upload_status(self) -> dict[str, Any]:
        return self.usecases.uploads.status()

    async def upload_events(self, msg: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """The `uploads` stream channel: `{profiles: {NAME: status}}` now and after every change (a save
        queued, an upload started, finished or failed), for the status bar. Runs until unsubscribed."""
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()

        def changed() -> None:  # any thread
            loop.call_soon_threadsafe(wake.set)

        remove = self.usecases.uploads.add_listener(changed)
        try:
            last: dict[str, Any] | None = None
            while True:
                wake.clear()
                status = await self.services.run_blocking(self.upload_status)
                if status != last:
                    last = status
                    yield {"profiles": status}
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(wake.wait(), UPLOAD_STATUS_IDLE_S)
        finally:
            remove()

    def close(self) -> None:
        self.usecases.close()


def progress_emitter(emit: Emit) -> Callable[[Any], None]:
    """Turn the SSH layer's progress objects into the panel's `{type: progress|conflict, ...}` events."""

    def progress(event: Any) -> None:
        emit({"type": "progress", **asdict(event)})

    return progress


def _name(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise InputError("is required", where=key, fix=f"give the SSH {key} name")
    return value


def _local_dir(body: dict[str, Any], default: str | None = ".") -> Any:
    """`local_dir` as given: a string (a folder relative to the Jupyter root), never a number turned into
    one (`local_dir: 5` was stored as "5")."""
    value = body.get("local_dir")
    if value is None or value == "":
        return default
    if not isinstance(value, str):
        raise InputError(
            f"must be a string (a folder relative to the Jupyter root), not {type(value).__name__}",
            where="local_dir",
        )
    return value


_FINGERPRINT = re.compile(r"^SHA256:[A-Za-z0-9+/]{43}$")


def _fingerprint(body: dict[str, Any], key: str, what: str) -> str | None:
    """A host key fingerprint field: absent, or `SHA256:` and 43 base64 characters as ssh-keygen prints."""
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not _FINGERPRINT.match(value.strip()):
        raise InputError(
            f"must be {what} (SHA256: and 43 characters), got {str(value)[:80]!r}",
            where=key,
            fix="copy the fingerprint (SHA256:...) from the refusal, after checking it",
        )
    return value.strip()
