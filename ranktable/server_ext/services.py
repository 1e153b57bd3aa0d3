"""What the handlers talk to: one service per domain (layout, jobs, remote) plus the threads and streams.

Every domain method is blocking and runs on the extension's thread pool (`run_blocking`), or returns an
async iterator for the stream websocket. The domain services turn JSON into calls of the use cases
(``ranktable.usecases``); heavy imports (kubernetes, paramiko) happen on first use, so loading the
extension stays fast and a missing optional part fails only the feature that needs it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from ranktable.errors import InputError
from ranktable.server_ext.config import Ranktable
from ranktable.server_ext.hub import Hub
from ranktable.server_ext.jobs_service import JobsService
from ranktable.server_ext.layout_service import LayoutService
from ranktable.server_ext.observe_service import ObserveService
from ranktable.server_ext.offload import BodyWorker, LayoutContext
from ranktable.server_ext.paths import confined, confined_file
from ranktable.server_ext.remote_service import RemoteService

T = TypeVar("T")


class Services:
    """The shared state of the extension: thread pool, operation hub, Jupyter root, domain services."""

    def __init__(
        self, config: Ranktable, *, root_dir: str, log: logging.Logger | None = None, base_url: str = "/"
    ) -> None:
        self.config = config
        self.base_url = base_url  # the Jupyter server's, for the authenticated URL of a proxied forward
        self.root_dir = str(Path(root_dir).expanduser().resolve())
        self.log = log or logging.getLogger("ranktable.server_ext")
        self.executor = ThreadPoolExecutor(max_workers=config.workers, thread_name_prefix="ranktable")
        self.body_worker = BodyWorker()  # large inline rank tables and topologies: parsed off the GIL
        self.hub = Hub(buffer=config.stream_buffer)
        self.layout = LayoutService(self)
        self.jobs = JobsService(self)
        self.remote = RemoteService(self)
        self.observe = ObserveService(self)

    async def run_blocking(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, partial(fn, *args))

    def layout_context(self, *, may_read_files: bool) -> LayoutContext:
        return LayoutContext(self.root_dir, self.config.topology, self.config.topology_format, may_read_files)

    def local_path(self, relative: str, field: str) -> Path:
        return confined(self.root_dir, relative, field=field)

    def local_file(self, relative: str, field: str) -> Path:
        """An existing file inside the Jupyter root (errors name the field, not the server's path)."""
        return confined_file(self.root_dir, relative, field)

    def server_config(self) -> dict[str, Any]:
        from ranktable.compose.spec import FRAMEWORKS
        from ranktable.usecases.jobs import configured_kubeconfig

        kubeconfig = configured_kubeconfig(self.config.kubeconfig or None)
        return {
            "namespace": self.jobs.namespace,
            "user": self.jobs.hub_user,
            "context": self.config.context,
            "kubeconfig": "configured" if kubeconfig else "none",
            "flavours": {name: f.to_json() for name, f in self.jobs.usecases.flavours().items()},
            "frameworks": list(FRAMEWORKS),
            "sync_mode": self.config.sync_mode,
            "topology": bool(self.config.topology),
        }

    def post_save_hook(self) -> Callable[..., None] | None:
        return self.remote.post_save_hook()

    def open_stream(self, msg: dict[str, Any]) -> AsyncIterator[Any]:
        channel = msg.get("channel")
        if channel == "logs":
            return self.jobs.logs(msg)
        if channel == "jobs":
            return self.jobs.jobs(msg)
        if channel == "uploads":
            return self.remote.upload_events(msg)
        if channel == "operation":
            op = msg.get("operation")
            if not isinstance(op, str):
                raise InputError(
                    "is required", where="operation", fix="the id a POST /ranktable/sync returned"
                )
            return self.hub.follow(op)
        raise InputError(
            f"unknown channel {channel!r}", where="channel", fix="use logs, jobs, uploads or operation"
        )

    async def close(self) -> None:
        await self.hub.close()
        await self.run_blocking(self.jobs.close)  # the auto-resume policy's thread
        await self.run_blocking(self.remote.close)  # uploaders, port forwards, SSH transports
        await self.run_blocking(self.observe.close)  # log followers
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.body_worker.close()
