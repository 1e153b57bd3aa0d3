"""Port forwards to a Notebook instance (TensorBoard, a web app): a 127.0.0.1 listener per forward whose
connections become ``direct-tcpip`` channels on the profile's transport (ProxyJump included).

Never bound to any other interface. One process-wide registry (``default_forwards()``) is shared by the
server extension (REST + panel) and the magics; the CLI runs its own forward in the foreground.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

import paramiko

from ranktable.errors import ConflictError, InputError, NotFoundError
from ranktable.remote.errors import SshError
from ranktable.remote.kernel_link import KernelLink
from ranktable.remote.kernel_tunnel import PortForwarder
from ranktable.remote.manager import ConnectionManager, default_manager

MAX_FORWARDS = 32  # per process: each holds a listener and up to a few channels
REMOTE_HOST = "127.0.0.1"  # what the instance's own loopback serves (TensorBoard's default bind)


def check_port(value: object, where: str, *, allow_zero: bool = False) -> int:
    low = 0 if allow_zero else 1
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= 65535:
        raise InputError(
            f"must be a port number {low}-65535, not {value!r:.40}",
            where=where,
            fix="e.g. 6006 for TensorBoard" + (" (0 or omitted: any free local port)" if allow_zero else ""),
        )
    return value


@dataclass(frozen=True)
class Forward:
    id: str
    profile: str
    remote_port: int
    local_port: int
    created: float

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.local_port}/"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "url": self.url, "remote_host": REMOTE_HOST, "bind": "127.0.0.1"}


class ForwardRegistry:
    """The open forwards of this process, by id."""

    def __init__(self, manager: ConnectionManager | None = None) -> None:
        self._manager = manager
        self._lock = threading.Lock()
        self._open: dict[str, tuple[Forward, PortForwarder]] = {}
        self._ids = itertools.count(1)

    @property
    def manager(self) -> ConnectionManager:
        return self._manager or default_manager()

    def open(self, profile: str, remote_port: object, local_port: object = 0) -> Forward:
        """Forward 127.0.0.1:``local_port`` (0: a free one) to ``remote_port`` on the profile's instance.

        Checks first that something listens on the remote port, so a typo is an error now, not a blank
        browser tab later.
        """
        remote = check_port(remote_port, "remote_port")
        local = check_port(local_port if local_port is not None else 0, "local_port", allow_zero=True)
        with self._lock:
            if len(self._open) >= MAX_FORWARDS:
                raise ConflictError(
                    f"{MAX_FORWARDS} forwards are open (limit {MAX_FORWARDS})",
                    where="forwards",
                    fix="close forwards you no longer use",
                )
        link = KernelLink(self.manager.get(profile), owned=False)
        try:
            probe = link.open_forward((REMOTE_HOST, remote), ("127.0.0.1", 0))
        except paramiko.ChannelException as exc:
            raise SshError(
                f"nothing accepts connections on port {remote} of the instance ({exc})",
                where="remote_port",
                fix="start the service first (e.g. tensorboard --port 6006) or check the port",
            ) from exc
        probe.close()
        forwarder = PortForwarder(link.open_forward, name=f"ranktable-forward-{profile}-{remote}")
        try:
            bound = forwarder.listen(local)
        except OSError as exc:
            forwarder.close()
            if exc.errno == errno.EADDRINUSE:
                raise ConflictError(
                    f"local port {local} is already in use", where="local_port", fix="pick another or omit it"
                ) from exc
            raise InputError(f"cannot listen on 127.0.0.1:{local}: {exc}", where="local_port") from exc
        forwarder.point(bound, (REMOTE_HOST, remote))
        forwarder.start()
        forward = Forward(f"fwd-{next(self._ids)}", profile, remote, bound, time.time())
        with self._lock:
            self._open[forward.id] = (forward, forwarder)
        return forward

    def list(self) -> list[Forward]:
        with self._lock:
            return [forward for forward, _ in self._open.values()]

    def close(self, forward_id: str) -> Forward:
        with self._lock:
            found = self._open.pop(forward_id, None)
        if found is None:
            raise NotFoundError(
                f"no open forward {forward_id!r}", where="forward", fix="list the open forwards"
            )
        found[1].close()
        return found[0]

    def close_all(self, profile: str | None = None) -> None:
        for forward in self.list():
            if profile is None or forward.profile == profile:
                with contextlib.suppress(NotFoundError):
                    self.close(forward.id)


_default: ForwardRegistry | None = None
_default_lock = threading.Lock()


def default_forwards() -> ForwardRegistry:
    """The process-wide registry (server extension and magics)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = ForwardRegistry()
        return _default
