"""The one object the handlers talk to: it calls the core, jobs and remote layers, nothing more.

Every method here is blocking and runs on the extension's thread pool (`run_blocking`), or returns an
async iterator for the stream websocket. Heavy imports (kubernetes, paramiko) happen on first use, so
loading the extension stays fast and a missing optional part fails only the feature that needs it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ranktable.errors import InputError, NotFoundError, RanktableError
from ranktable.server_ext.config import Ranktable
from ranktable.server_ext.hub import Emit, Hub, OpFunction
from ranktable.server_ext.paths import confined
from ranktable.server_ext.preview import likely_nodes, plan_report, preview_rank_table

if TYPE_CHECKING:
    from ranktable.jobs.cluster import ClusterClient
    from ranktable.remote.manager import ConnectionManager
    from ranktable.remote.profiles import ProfileStore

T = TypeVar("T")


class Services:
    """Adapters from JSON requests to the product's layers, plus the threads and streams they need."""

    def __init__(self, config: Ranktable, *, root_dir: str, log: logging.Logger | None = None) -> None:
        self.config = config
        self.root_dir = str(Path(root_dir).expanduser().resolve())
        self.log = log or logging.getLogger("ranktable.server_ext")
        self.executor = ThreadPoolExecutor(max_workers=config.workers, thread_name_prefix="ranktable")
        self.hub = Hub(buffer=config.stream_buffer)
        self._clients: dict[str, ClusterClient] = {}
        self._clients_lock = threading.Lock()
        self._manager: ConnectionManager | None = None
        self._forwards: Any = None  # ForwardRegistry, opened lazily
        self._uploaders: dict[str, Any] = {}
        self._uploaders_lock = threading.Lock()

    async def run_blocking(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, partial(fn, *args))

    def local_path(self, relative: str, field: str) -> Path:
        return confined(self.root_dir, relative, field=field)

    def local_file(self, relative: str, field: str) -> Path:
        """An existing file inside the Jupyter root (errors name the field, not the server's path)."""
        path = self.local_path(relative, field)
        if not path.is_file():
            raise NotFoundError(f"no file {relative!r} in the Jupyter root folder", where=field)
        return path

    # -- configuration --------------------------------------------------------------------------------
    def flavours(self) -> dict[str, Any]:
        from ranktable.jobs.flavours import load_flavours, parse_flavours

        table = load_flavours()
        if self.config.flavours:
            table.update(parse_flavours(dict(self.config.flavours), "c.Ranktable.flavours"))
        return table

    def server_config(self) -> dict[str, Any]:
        from ranktable.jobs.spec import FRAMEWORKS

        return {
            "namespace": self.config.namespace,
            "context": self.config.context,
            "kubeconfig": "configured" if self.config.kubeconfig else "simulated pool",
            "flavours": {name: f.to_json() for name, f in self.flavours().items()},
            "frameworks": list(FRAMEWORKS),
            "sync_mode": self.config.sync_mode,
            "topology": bool(self.config.topology),
        }

    # -- pure core: validate, plan ------------------------------------------------------------------------
    def _document(self, body: dict[str, Any], key: str) -> tuple[str | bytes | dict[str, Any], str]:
        """A rank table / topology given inline (`key`) or as a file in the Jupyter root (`key_path`)."""
        inline = body.get(key)
        path = body.get(f"{key}_path")
        if inline is not None and path:
            raise InputError(f"give either {key} or {key}_path, not both", where=key)
        if path:
            if not isinstance(path, str):
                raise InputError("must be a string", where=f"{key}_path")
            return self.local_file(path, f"{key}_path").read_bytes(), path
        if isinstance(inline, str | dict):
            return inline, key
        if inline is None:
            raise InputError("is required", where=key, fix=f"send `{key}` (content) or `{key}_path` (a file)")
        raise InputError("must be a JSON object or a string", where=key)

    def validate(self, body: dict[str, Any]) -> dict[str, Any]:
        from ranktable.hccl.validate import check_document

        data, source = self._document(body, "ranktable")
        report = check_document(data, source)
        out = report.to_json()
        out["ok"] = report.ok
        out["summary"] = report.summary()
        if report.table is not None:
            out["servers"] = len(report.table.servers)
            out["ranks"] = report.table.rank_size
        return out

    def _topology(self, body: dict[str, Any]) -> Any:
        from ranktable.topology.load import load_topology

        fmt = body.get("topology_format") or None
        if fmt is not None and not isinstance(fmt, str):
            raise InputError("must be a string", where="topology_format")
        if body.get("topology_path"):
            return load_topology(self.local_file(str(body["topology_path"]), "topology_path"), fmt)
        if body.get("topology") is None:
            if self.config.topology:
                return load_topology(self.config.topology, self.config.topology_format or None)
            raise InputError(
                "is required", where="topology", fix="send `topology` (content) or `topology_path` (a file)"
            )
        data, _ = self._document(body, "topology")
        text = data if isinstance(data, str | bytes) else __import__("json").dumps(data)
        with tempfile.TemporaryDirectory(prefix="ranktable-topology-") as tmp:
            file = Path(tmp) / "topology"
            file.write_bytes(text.encode() if isinstance(text, str) else text)
            try:
                return load_topology(file, fmt)
            except RanktableError as exc:  # name the request field, not our temporary file
                if exc.where:
                    exc.where = exc.where.replace(str(file), "topology")
                    exc.args = (exc.message,)
                raise

    def plan(self, body: dict[str, Any]) -> dict[str, Any]:
        from ranktable.hccl.io import parse_rank_table

        message_bytes = _message_bytes(body)
        data, source = self._document(body, "ranktable")
        table = parse_rank_table(data, source)
        topology = self._topology(body)
        return plan_report(table, topology, message_bytes=message_bytes, title=source)

    # -- jobs: compose (pure) -------------------------------------------------------------------------------
    def compose(self, body: dict[str, Any]) -> dict[str, Any]:
        from ranktable.jobs.compose import compose, dump_manifests
        from ranktable.jobs.spec import JobSpec
        from ranktable.jobs.validate import validate_spec

        raw = body.get("spec")
        if not isinstance(raw, dict):
            raise InputError("must be a JSON object (the job spec)", where="spec")
        raw = {"namespace": self.config.namespace, **raw}
        try:
            spec = JobSpec.from_dict(raw)
        except InputError as exc:
            issue = {"field": exc.where, "severity": "error", "message": exc.reason, "fix": exc.fix or ""}
            return {"issues": [issue], "yaml": "", "spec": None}
        issues = [i.to_json() for i in validate_spec(spec, self.flavours())]
        return {"issues": issues, "yaml": dump_manifests(compose(spec)), "spec": spec.to_dict()}

    # -- jobs: cluster ---------------------------------------------------------------------------------
    def client(self, namespace: str | None = None) -> ClusterClient:
        from ranktable.jobs.cluster import ClusterClient

        ns = namespace or self.config.namespace
        with self._clients_lock:
            if ns not in self._clients:
                timeout = (5.0, float(self.config.request_timeout))
                self._clients[ns] = ClusterClient(
                    kubeconfig=self.config.kubeconfig or None,
                    context=self.config.context or None,
                    namespace=ns,
                    timeout=timeout,
                )
            return self._clients[ns]

    def list_jobs(self, namespace: str | None) -> dict[str, Any]:
        client = self.client(namespace)
        return {"jobs": [job_row(client, j) for j in client.list_jobs()]}

    def submit(self, body: dict[str, Any]) -> dict[str, Any]:
        from ranktable.jobs.compose import compose, load_manifests, spec_from_manifests
        from ranktable.jobs.spec import JobSpec
        from ranktable.jobs.validate import has_errors, validate_spec

        if body.get("yaml") is not None:
            if not isinstance(body["yaml"], str):
                raise InputError("must be a string (YAML manifests)", where="yaml")
            spec = spec_from_manifests(load_manifests(body["yaml"], "yaml"))
        elif isinstance(body.get("spec"), dict):
            spec = JobSpec.from_dict({"namespace": self.config.namespace, **body["spec"]})
        else:
            raise InputError("is required", where="spec", fix="send the job `spec` (or `yaml` manifests)")
        issues = validate_spec(spec, self.flavours())
        if has_errors(issues):
            first = next(i for i in issues if i.severity == "error")
            raise InputError(first.message, where=first.field, fix=first.fix or None)
        result = self.client(spec.namespace).submit(compose(spec))
        return result.to_json()

    def describe(self, namespace: str, name: str) -> dict[str, Any]:
        return self.client(namespace).describe(name).to_json()

    def stop(self, namespace: str, name: str) -> dict[str, Any]:
        return {"deleted": self.client(namespace).stop(name)}

    def job_ranktable(self, namespace: str, name: str) -> dict[str, Any]:
        from ranktable.hccl.validate import check_document
        from ranktable.jobs.compose import RANK_TABLE_KEY, configmap_name

        cm = self.client(namespace).get_configmap(configmap_name(name))
        text = (cm.get("data") or {}).get(RANK_TABLE_KEY) or ""
        report = check_document(text, f"{configmap_name(name)}/{RANK_TABLE_KEY}")
        out = report.to_json()
        out["ok"] = report.ok
        out["summary"] = report.summary()
        out["text"] = text
        return out

    def job_layout(self, namespace: str, name: str, topology_path: str | None) -> dict[str, Any]:
        from ranktable.jobs.layout import job_layout

        path = str(self.local_file(topology_path, "topology_path")) if topology_path else self.config.topology
        layout = job_layout(self.client(namespace), name, path or None)
        return {
            "report": layout.report,
            "svg": layout.svg,
            "warnings": list(layout.report.get("warnings") or []),
            "rank_mapping": layout.report.get("rank_mapping"),
            "source": layout.topology_source,
        }

    def layout_preview(self, body: dict[str, Any]) -> dict[str, Any]:
        """Where a composed job would likely land (the first free matching nodes) and how it would be planned.

        The real placement is the scheduler's; this shows the plan for the nodes an idle pool would give.
        """
        from ranktable.jobs.spec import JobSpec
        from ranktable.jobs.topology_source import cluster_topology
        from ranktable.topology import add_node_aliases, load_topology

        raw = body.get("spec")
        if not isinstance(raw, dict):
            raise InputError("must be a JSON object (the job spec)", where="spec")
        spec = JobSpec.from_dict({"namespace": self.config.namespace, **raw})
        client = self.client(spec.namespace)
        nodes = client.list_nodes()
        path = body.get("topology_path")
        if path:
            topology = load_topology(self.local_file(str(path), "topology_path"))
            add_node_aliases(topology, nodes)
        elif self.config.topology:
            topology = load_topology(self.config.topology, self.config.topology_format or None)
            add_node_aliases(topology, nodes)
        else:
            topology = cluster_topology(client.kube, nodes)
        fitting = likely_nodes(nodes, spec)
        table = preview_rank_table(fitting[: spec.nodes], spec.npus_per_node)
        result = plan_report(
            table, topology, message_bytes=_message_bytes(body), title=f"{spec.name} (preview)", spec=spec
        )
        result["warnings"] = [
            "preview: assumes the pods land on the first matching nodes in name order; the real "
            "placement is known once the job runs",
            *result["warnings"],
        ]
        return result

    def resubmit(self, namespace: str, name: str) -> dict[str, Any]:
        """Stop the job and submit the same manifests again (what users do after fixing the cause)."""
        import time

        from ranktable.jobs.compose import compose, configmap_name, spec_from_manifests

        client = self.client(namespace)
        job = client.get_job(name)
        configmap = client.get_configmap(configmap_name(name))
        spec = spec_from_manifests([configmap, job])
        client.stop(name)
        deadline = time.monotonic() + float(self.config.request_timeout)
        while time.monotonic() < deadline:
            try:
                client.get_job(name)
            except NotFoundError:
                break
            time.sleep(0.3)
        else:
            raise RanktableError(f"job {name} is still being deleted", fix="resubmit again in a moment")
        return client.submit(compose(spec)).to_json()

    # -- remote: profiles, sync, kernels ---------------------------------------------------------------------
    @property
    def manager(self) -> ConnectionManager:
        if self._manager is None:
            from ranktable.remote.manager import ConnectionManager, default_manager
            from ranktable.remote.profiles import ProfileStore

            if self.config.state_dir:
                self._manager = ConnectionManager(ProfileStore(Path(self.config.state_dir)))
            else:
                self._manager = default_manager()
        return self._manager

    @property
    def profiles(self) -> ProfileStore:
        return self.manager.profiles

    def list_profiles(self) -> dict[str, Any]:
        invalid = self.profiles.invalid_profiles()
        return {
            "profiles": [p.to_json() for p in self.profiles.list_profiles()],
            "invalid": [{"name": n, **exc.to_json()} for n, exc in sorted(invalid.items())],
        }

    def add_profile(self, body: dict[str, Any]) -> dict[str, Any]:
        from ranktable.remote.profiles import SyncSettings, profile_from_request

        defaults = SyncSettings(upload=self.config.sync_mode, delete_remote=self.config.sync_delete)
        return self.profiles.add(profile_from_request(body, defaults)).to_json()

    def update_profile(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        from ranktable.remote.profiles import patched_profile

        body = dict(body)
        local = body.pop("local_dir", None)
        updated = patched_profile(self.profiles.get(name), body)
        local_dir = self.local_path(str(local), "local_dir") if local else None
        self.profiles.add(updated, replace_existing=True)
        self.manager.close(name)
        if local_dir is not None:
            self._remember_local_dir(name, local_dir)
        self._refresh_uploaders()
        return updated.to_json()

    def remove_profile(self, name: str) -> None:
        self.profiles.remove(name)
        self.manager.close(name)

    def test_profile(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """Connect (and run a liveness probe); an unknown host key comes back with its fingerprint."""
        from ranktable.remote.errors import HostKeyChanged, PassphraseRequired, UnknownHostKey

        accept = body.get("accept_host_key")
        if accept is not None and not isinstance(accept, str):
            raise InputError("must be the fingerprint string shown to the user", where="accept_host_key")
        replacing = body.get("replace_host_key")
        if replacing is not None:
            if not isinstance(replacing, str):
                raise InputError("must be the new fingerprint typed by the user", where="replace_host_key")
            self.manager.replace_host_key(name, replacing)
        passphrase = body.get("passphrase")
        if passphrase:
            profile = self.profiles.get(name)
            if profile.key_file:
                self.manager.set_passphrase(profile.key_file, str(passphrase))
        if accept:
            self.manager.accept_host_key(name, accept)
            self.manager.close(name)
        conn = self.manager.get(name)
        try:
            conn.connect()
            alive = conn.probe()
        except UnknownHostKey as exc:
            return {
                "status": "unknown-host-key",
                "message": exc.message,
                "fingerprint": exc.fingerprint,
                "key_type": exc.key_type,
                "host": exc.host_id,
            }
        except HostKeyChanged as exc:
            return {
                "status": "host-key-changed",
                "message": exc.message,
                "host": exc.host_id,
                "key_type": exc.key_type,
                "recorded": exc.expected,
                "presented": exc.presented,
            }
        except PassphraseRequired as exc:
            return {"status": "passphrase-required", "message": exc.message}
        except RanktableError as exc:
            return {"status": "error", "message": exc.message, "reason": exc.reason, "fix": exc.fix}
        return {
            "status": "ok" if alive else "error",
            "message": f"connected to {conn.endpoint.host_id}"
            if alive
            else "connected, but the probe failed",
        }

    @property
    def forwards(self) -> Any:
        if self._forwards is None:
            from ranktable.remote.forwards import ForwardRegistry

            self._forwards = ForwardRegistry(self.manager)
        return self._forwards

    def list_forwards(self) -> dict[str, Any]:
        return {"forwards": [f.to_json() for f in self.forwards.list()]}

    def open_forward(self, body: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(body) - {"profile", "remote_port", "local_port"})
        if unknown:
            raise InputError(f"unknown field(s) {', '.join(unknown)}", where=unknown[0])
        profile = _name(body, "profile")
        self.profiles.get(profile)
        return dict(
            self.forwards.open(profile, body.get("remote_port"), body.get("local_port") or 0).to_json()
        )

    def close_forward(self, forward_id: str) -> dict[str, Any]:
        return dict(self.forwards.close(forward_id).to_json())

    def install_kernel(self, profile: str, body: dict[str, Any]) -> dict[str, Any]:
        from ranktable.remote.kernelspec import install_kernelspec

        self.profiles.get(profile)
        python = body.get("python")
        kwargs: dict[str, Any] = {}
        if python:
            if not isinstance(python, str):
                raise InputError("must be a string (the remote Python path)", where="python")
            kwargs["python"] = python
        name = install_kernelspec(profile, **kwargs)
        return {"kernel_name": name, "display_name": f"Python ({profile})"}

    def _syncer(self, profile_name: str, local: Path) -> Any:
        from ranktable.remote.sync import Syncer

        profile = self.profiles.get(profile_name)
        return Syncer(self.manager.get(profile_name), local, profile.sync, home=self.profiles.home)

    def prepare_sync(self, body: dict[str, Any]) -> tuple[str, str, OpFunction]:
        profile = _name(body, "profile")
        local = self.local_path(str(body.get("local_dir") or "."), "local_dir")
        syncer = self._syncer(profile, local)
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
        dry_run = bool(body.get("dry_run", False))
        self._remember_local_dir(profile, local)

        def run(emit: Emit, cancel: threading.Event) -> Any:
            result = syncer.sync(
                dry_run=dry_run, force=force, delete=delete, only=only, progress=progress_emitter(emit)
            )
            for conflict in result.conflicts:
                emit({"type": "conflict", "path": conflict.path, "reason": conflict.reason})
            return sync_result_json(result)

        return "sync", f"sync {os.path.relpath(local, self.root_dir)} -> {profile}", run

    def prepare_download(self, body: dict[str, Any]) -> tuple[str, str, OpFunction]:
        """Fetch a remote path into the Jupyter root, or resolve a sync conflict in the remote's favour."""
        profile = _name(body, "profile")
        conflict = body.get("conflict")
        if conflict is not None:
            if not isinstance(conflict, str) or not conflict:
                raise InputError("must be the conflicting path from the sync", where="conflict")
            local_dir = self.local_path(str(body.get("local_dir") or "."), "local_dir")
            syncer = self._syncer(profile, local_dir)

            def resolve(emit: Emit, cancel: threading.Event) -> Any:
                path = syncer.download_conflict(conflict)
                return {"files": 1, "local_path": os.path.relpath(path, self.root_dir), "conflict": conflict}

            return "download", f"download {profile}:{conflict} (conflict)", resolve
        remote_path = body.get("remote_path")
        if not isinstance(remote_path, str) or not remote_path.strip():
            raise InputError("is required", where="remote_path", fix="a path relative to the remote folder")
        local = self.local_path(str(body.get("local_path") or remote_path), "local_path")
        syncer = self._syncer(profile, Path(self.root_dir))

        def run(emit: Emit, cancel: threading.Event) -> Any:
            files = syncer.download(remote_path, local, progress=progress_emitter(emit))
            return {"files": len(files), "local_path": os.path.relpath(local, self.root_dir)}

        return "download", f"download {profile}:{remote_path}", run

    def prepare_run(self, body: dict[str, Any]) -> tuple[str, str, OpFunction]:
        from ranktable.remote.run import run_remote

        profile = _name(body, "profile")
        self.profiles.get(profile)
        command = body.get("command")
        if not isinstance(command, str) or not command.strip():
            raise InputError(
                "is required", where="command", fix="the shell command to run in the remote folder"
            )

        def run(emit: Emit, cancel: threading.Event) -> Any:
            def out(stream: str) -> Callable[[str], None]:
                def send(text: str) -> None:
                    emit({"type": "output", "stream": stream, "text": text})

                return send

            status = run_remote(
                self.manager.get(profile),
                command,
                on_stdout=out("stdout"),
                on_stderr=out("stderr"),
                cancel=cancel,
            )
            return {"exit_status": status}

        return "run", f"{profile}: {command}", run

    # -- automatic upload ---------------------------------------------------------------------------------
    def _local_dirs_file(self) -> Path:
        return self.profiles.home / "panel-local-dirs.json"

    def _local_dirs(self) -> dict[str, str]:
        import json

        try:
            data = json.loads(self._local_dirs_file().read_text())
        except (OSError, ValueError):
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def _remember_local_dir(self, profile: str, local: Path) -> None:
        """The folder last synced to a profile: where saves are picked up for automatic upload."""
        from ranktable.remote.state import write_private_json

        dirs = self._local_dirs()
        if dirs.get(profile) != str(local):
            dirs[profile] = str(local)
            write_private_json(self._local_dirs_file(), dirs)
            self._refresh_uploaders()

    def post_save_hook(self) -> Callable[..., None] | None:
        """The SSH layer's save hook (it only enqueues), fed by one AutoUploader per profile in use."""
        try:
            from ranktable.remote.autoupload import post_save_hook
        except ImportError:
            return None
        try:
            self._refresh_uploaders()
        except RanktableError as exc:
            self.log.warning("ranktable: automatic upload disabled: %s", exc.message)
        return post_save_hook

    def _refresh_uploaders(self) -> None:
        """(Re)start one uploader per profile whose mode is not `never` and whose local folder is known."""
        from ranktable.remote.autoupload import AutoUploader, register_uploader, unregister_uploader

        with self._uploaders_lock:
            for uploader in self._uploaders.values():
                unregister_uploader(uploader)
                uploader.stop()
            self._uploaders = {}
            dirs = self._local_dirs()
            for profile in self.profiles.list_profiles():
                local = dirs.get(profile.name)
                if profile.sync.upload == "never" or not local or not Path(local).is_dir():
                    continue
                try:
                    uploader = AutoUploader(self._syncer(profile.name, Path(local)), profile.sync.upload)
                except RanktableError as exc:
                    self.log.warning("ranktable: no automatic upload for %s: %s", profile.name, exc.message)
                    continue
                register_uploader(uploader.start())
                self._uploaders[profile.name] = uploader

    def upload_status(self) -> dict[str, Any]:
        with self._uploaders_lock:
            return {name: u.status() for name, u in self._uploaders.items()}

    # -- streams --------------------------------------------------------------------------------------
    def open_stream(self, msg: dict[str, Any]) -> AsyncIterator[Any]:
        channel = msg.get("channel")
        if channel == "logs":
            return self._logs(msg)
        if channel == "jobs":
            return self._jobs(msg)
        if channel == "operation":
            op = msg.get("operation")
            if not isinstance(op, str):
                raise InputError(
                    "is required", where="operation", fix="the id a POST /ranktable/sync returned"
                )
            return self.hub.follow(op)
        raise InputError(f"unknown channel {channel!r}", where="channel", fix="use logs, jobs or operation")

    async def _logs(self, msg: dict[str, Any]) -> AsyncIterator[Any]:
        from ranktable.jobs.logs import timestamp_key

        name = msg.get("job")
        if not isinstance(name, str) or not name:
            raise InputError("is required", where="job", fix="the job whose pods' logs to follow")
        namespace = msg.get("namespace") or self.config.namespace
        follow = bool(msg.get("follow", True))
        since_raw = msg.get("since") or {}
        if not isinstance(since_raw, dict):
            raise InputError("must be an object {pod: timestamp}", where="since")
        since = {str(pod): timestamp_key(str(ts)) for pod, ts in since_raw.items()}
        client = await self.run_blocking(self.client, str(namespace))
        stream = await self.run_blocking(client.logs, name, follow)

        def lines(stop: threading.Event) -> Iterator[dict[str, Any]]:
            def close_when_stopped() -> None:
                stop.wait()
                stream.close()

            closer = threading.Thread(target=close_when_stopped, daemon=True)
            closer.start()
            try:
                for line in stream:
                    start = since.get(line.pod)
                    if start is not None and timestamp_key(line.timestamp) < start:
                        continue  # already shown before the reconnect
                    yield {"pod": line.pod, "rank": line.node_rank, "ts": line.timestamp, "text": line.text}
            finally:
                stop.set()

        async for batch in self.hub.iterate(lines, batch_seconds=self.config.log_batch_seconds):
            yield {"lines": batch}

    async def _jobs(self, msg: dict[str, Any]) -> AsyncIterator[Any]:
        from ranktable.jobs.cluster import GROUP, PLURAL, VERSION, JobSummary
        from ranktable.jobs.kube import watch

        namespace = str(msg.get("namespace") or self.config.namespace)
        client = await self.run_blocking(self.client, namespace)
        jobs = await self.run_blocking(lambda: [job_row(client, j) for j in client.list_jobs()])
        yield {"event": "snapshot", "jobs": jobs}

        def events(stop: threading.Event) -> Iterator[dict[str, Any]]:
            kube = client.kube
            for event in watch(
                kube,
                kube.custom.list_namespaced_custom_object,
                GROUP,
                VERSION,
                namespace,
                PLURAL,
                what=f"Volcano jobs in {namespace}",
                deadline=None,
            ):
                if stop.is_set():
                    return
                summary = JobSummary.from_job(event.obj)
                if event.type == "DELETED":
                    yield {"event": "delete", "job": summary.to_json()}
                else:
                    yield {"event": "upsert", "job": job_row(client, summary)}

        async for batch in self.hub.iterate(events):
            for item in batch:
                yield item

    def _stop_uploaders(self) -> None:
        from ranktable.remote.autoupload import unregister_uploader

        with self._uploaders_lock:
            for uploader in self._uploaders.values():
                unregister_uploader(uploader)
                uploader.stop()
            self._uploaders = {}

    async def close(self) -> None:
        await self.hub.close()
        if self._uploaders:
            await self.run_blocking(self._stop_uploaders)
        if self._forwards is not None:
            await self.run_blocking(self._forwards.close_all)
        if self._manager is not None:
            self._manager.close()
        self.executor.shutdown(wait=False, cancel_futures=True)


def job_row(client: ClusterClient, summary: Any) -> dict[str, Any]:
    """A job summary plus its rank-table status (initializing / completed / missing...), for the table."""
    row: dict[str, Any] = summary.to_json()
    try:
        row["rank_table"] = client.rank_table_status(summary.name)
    except RanktableError:
        row["rank_table"] = "unknown"
    return row


def _message_bytes(body: dict[str, Any]) -> int | None:
    value = body.get("message_bytes")
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise InputError(f"must be a positive integer, not {value!r}", where="message_bytes")
    return value


def progress_emitter(emit: Emit) -> Callable[[Any], None]:
    """Turn the SSH layer's progress objects into the panel's `{type: progress|conflict, ...}` events."""

    def progress(event: Any) -> None:
        from dataclasses import asdict

        emit({"type": "progress", **asdict(event)})

    return progress


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


def _name(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise InputError("is required", where=key, fix=f"give the SSH {key} name")
    return value
