"""The connection to one cluster: an API client from an explicit kubeconfig and context, JSON calls with
read timeouts, Kubernetes errors turned into the product's errors, and a watch that resumes.

Nothing here touches the process-global kubernetes configuration, so several clusters (a real pool and
the simulated one) can be used side by side in one process (the Jupyter server).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ranktable.cluster.rest import CoreApi, CustomObjects
from ranktable.cluster.transport import ApiException, Transport, load_kubeconfig
from ranktable.errors import (
    ConflictError,
    InputError,
    NotFoundError,
    PermissionDenied,
    RanktableError,
    Unavailable,
)
from ranktable.home import SHARED_SETTINGS_ENV

DEFAULT_TIMEOUT = (5.0, 30.0)
WATCH_SECONDS = 60
POOL_SIZE = 128


def network_errors() -> tuple[type[BaseException], ...]:
    """What a request raises when the API server cannot be reached or answers garbage: urllib3's errors
    once urllib3 is loaded, and the socket's, TLS's and http.client's on the light path
    (`transport.Transport`), which a cold CLI command takes without importing urllib3."""
    import http.client
    import socket
    import ssl

    errors: tuple[type[BaseException], ...] = (
        ConnectionError,
        TimeoutError,
        ssl.SSLError,
        socket.gaierror,
        http.client.HTTPException,
    )
    urllib3 = sys.modules.get("urllib3")
    if urllib3 is not None:
        errors += (urllib3.exceptions.HTTPError,)
    return errors


NO_KUBECONFIG_FIX = (
    "pass --kubeconfig (or set KUBECONFIG / c.Ranktable.kubeconfig), or start the simulated pool with "
    "`ranktable sim start` and use the KUBECONFIG it prints"
)


def resolve_kubeconfig(kubeconfig: str | None) -> str | None:
    """An explicit path, else the JupyterLab server's (``$RANKTABLE_KUBECONFIG``, in its kernels and
    terminals), else ``$KUBECONFIG``, else ``~/.kube/config``; None when there is none at all.

    Falling back to the simulated pool is the caller's visible choice (the CLI says so), never made here.
    """
    if kubeconfig:
        return kubeconfig
    env = os.environ.get(SHARED_SETTINGS_ENV["kubeconfig"]) or os.environ.get("KUBECONFIG")
    if env:
        return env.split(os.pathsep)[0]
    default = Path.home() / ".kube" / "config"
    return str(default) if default.is_file() else None


def new_api_client(kubeconfig: str | None, context: str | None) -> Transport:
    """The transport to the kubeconfig's (or `context`'s) API server; the kubeconfig is read now."""
    path = resolve_kubeconfig(kubeconfig)
    if path is None:
        raise NotFoundError(
            "no cluster configured", where="kubeconfig ($KUBECONFIG, ~/.kube/config)", fix=NO_KUBECONFIG_FIX
        )
    if not Path(path).is_file():
        raise NotFoundError("kubeconfig not found", where=path, fix="pass --kubeconfig with an existing file")
    return Transport(load_kubeconfig(path, context), maxsize=POOL_SIZE)


@dataclass
class Kube:
    """One API client plus the timeouts used on every call."""

    api: Transport
    timeout: tuple[float, float] = DEFAULT_TIMEOUT

    @property
    def core(self) -> CoreApi:
        return CoreApi(self.api)

    @property
    def custom(self) -> CustomObjects:
        return CustomObjects(self.api)

    @property
    def host(self) -> str:
        return self.api.host

    def call(self, fn: Callable[..., Any], *args: Any, what: str, **kwargs: Any) -> dict[str, Any]:
        """Call an API method and return the decoded JSON body (no model classes in between)."""
        kwargs.setdefault("_request_timeout", self.timeout)
        try:
            decoded = fn(*args, _preload_content=True, **kwargs)  # the whole body, decoded
        except ApiException as exc:
            if exc.status == 0:  # the client's own wrapper for TLS and connection failures
                raise self.unreachable(exc) from None
            raise api_error(exc, what) from None
        except network_errors() as exc:
            raise self.unreachable(exc) from None
        return decoded or {}

    def get_raw(self, path: str, query: list[tuple[str, Any]], timeout: tuple[float, float]) -> Any:
        """A streaming GET on a path the generated client lacks a parameter for (``sinceTime``)."""
        # a real API server answers 406 to text/plain alone
        return self.api.request("GET", path, query, {"Accept": "application/json, */*"}, None, timeout)

    def unreachable(self, exc: BaseException) -> RanktableError:
        return UnreachableError(
            f"cannot reach the Kubernetes API at {self.host} ({type(exc).__name__})",
            fix="check --kubeconfig/--context, or start the simulated pool with `ranktable sim start`",
        )


class UnreachableError(Unavailable):
    """The API server did not answer (down, restarting, wrong address)."""


def status_of(exc: ApiException) -> dict[str, Any]:
    try:
        body = json.loads(exc.body or "{}")
    except (TypeError, ValueError):
        return {}
    return body if isinstance(body, dict) else {}


def api_error(exc: ApiException, what: str) -> RanktableError:
    """A Kubernetes Status error as the product's error, keeping the field for 422."""
    status = status_of(exc)
    message = str(status.get("message") or exc.reason or "request failed")
    if exc.status == 404:
        details = status.get("details") or {}
        if details.get("kind") == "namespaces":  # creating in a namespace that does not exist
            return NotFoundError(
                f"namespace {details.get('name')} does not exist ({what} was not created)",
                fix="ask the pool's admin to create it (`kubectl create namespace NAME`), or choose your "
                "namespace with -n / c.Ranktable.namespace",
            )
        return NotFoundError(f"{what} not found", fix="check the name and the namespace (-n)")
    if exc.status == 409:
        return ConflictError(f"{what} already exists", fix="choose another name or stop the existing one")
    if exc.status == 422:
        causes = (status.get("details") or {}).get("causes") or []
        field = ", ".join(str(c.get("field")) for c in causes if c.get("field")) or None
        reasons = "; ".join(str(c.get("message")) for c in causes if c.get("message")) or message
        return InputError(
            f"{what} rejected: {reasons}", where=field, fix="correct the field and submit again"
        )
    if exc.status == 403:
        return PermissionDenied(
            f"{what}: not allowed ({message})",
            fix="your Kubernetes RBAC does not allow it: ask the pool's admin, or work in your own namespace",
        )
    if exc.status == 401:
        return RanktableError(f"{what}: access denied ({message})", fix="check the kubeconfig's credentials")
    return RanktableError(f"{what}: HTTP {exc.status} {message}")


def iter_line_batches(resp: Any, chunk_size: int = 65536) -> Iterator[list[bytes]]:
    """Complete lines from a streaming HTTP response, a list per chunk received (so nothing waits).

    A trailing piece without a newline is a line cut by a dropped connection, not a line: it is not
    returned (the caller resumes from the last complete line and gets it whole).
    """
    pending = b""
    for chunk in resp.stream(chunk_size, decode_content=False):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        if lines:
            yield lines


def iter_lines(resp: Any, chunk_size: int = 65536) -> Iterator[bytes]:
    for batch in iter_line_batches(resp, chunk_size):
        yield from batch


@dataclass
class WatchEvent:
    type: str  # ADDED, MODIFIED, DELETED, or SYNC (state after a relist)
    obj: dict[str, Any]


def watch(
    kube: Kube,
    list_fn: Callable[..., Any],
    *args: Any,
    what: str,
    deadline: float | None = None,
    on_resume: Callable[[str], None] | None = None,
    stop: threading.Event | None = None,
    on_response: Callable[[Any], None] | None = None,
    whole_lists: bool = False,
    strict: bool = False,
    **selectors: Any,
) -> Iterator[WatchEvent]:
    """List, then watch from that resourceVersion; relist after 410 Gone, resume after a dropped stream.

    Yields SYNC for every object of each (re)list, so a consumer that compares states sees nothing lost.
    ``whole_lists``: one LIST event per (re)list instead (``obj`` is the listing), so a consumer keeping a
    store replaces it and forgets objects deleted while it was not watching. ``strict``: an unreachable API
    server raises `UnreachableError` (the caller reports it and retries) instead of being retried here
    silently, and a dropped stream relists (so a server that went away is noticed by that list).
    Ends at ``deadline`` (time.monotonic()) when given, or once ``stop`` is set. A watch blocks in a
    socket read until the server sends something, so ``on_response`` receives each streaming response:
    whoever sets ``stop`` calls `interrupt(response)` to end that read at once (and free the connection).
    """
    cursor = _Cursor()
    halt = stop or threading.Event()
    while (deadline is None or time.monotonic() < deadline) and not halt.is_set():
        if cursor.rv is None:
            try:
                listing = kube.call(list_fn, *args, what=what, **selectors)
            except UnreachableError:
                if strict:
                    raise
                if on_resume:
                    on_resume("API server unreachable; retrying")
                cursor.back_off(halt)
                continue
            cursor.rv = str((listing.get("metadata") or {}).get("resourceVersion") or "")
            yield from _listing_events(listing, whole_lists)
            # the watcher keeps what it needs; held here for the watch's life, the listing was a stale
            # second copy of every object that changed since (1,024 pods, #28)
            del listing
        remaining = _watch_seconds(deadline)
        try:
            resp = list_fn(
                *args,
                watch=True,
                resource_version=cursor.rv,
                timeout_seconds=remaining,
                allow_watch_bookmarks=True,
                _preload_content=False,
                _request_timeout=(kube.timeout[0], remaining + kube.timeout[1]),
                **selectors,
            )
            if on_response is not None:
                on_response(resp)
            try:
                if (yield from _stream_events(resp, what, cursor, on_resume, deadline)):
                    return
            finally:
                if halt.is_set():
                    resp.close()  # interrupted: the connection is not reusable
                else:
                    resp.release_conn()
        except ApiException as exc:
            if exc.status == 410:
                cursor.rv = None
                continue
            raise api_error(exc, what) from None
        except network_errors() as exc:
            if halt.is_set():
                return
            if on_resume:
                on_resume(f"watch connection dropped ({type(exc).__name__}); resuming")
            if strict:
                cursor.rv = None  # relist: it raises if the API server is gone, and resyncs if it restarted
            cursor.back_off(halt)


@dataclass
class _Cursor:
    """Where a watch stands: the resourceVersion to go on from (None: relist first) and the retry backoff."""

    rv: str | None = None
    backoff: float = 0.2

    def back_off(self, halt: threading.Event) -> None:
        halt.wait(self.backoff)
        self.backoff = min(self.backoff * 2, 5.0)


def _listing_events(listing: dict[str, Any], whole_lists: bool) -> Iterator[WatchEvent]:
    """A (re)list as events: one LIST of the whole listing, or a SYNC per object."""
    if whole_lists:
        yield WatchEvent("LIST", listing)
    else:
        for item in listing.get("items") or []:
            yield WatchEvent("SYNC", item)


def _watch_seconds(deadline: float | None) -> int:
    """How long the next watch request may stay open: WATCH_SECONDS, or less to end by ``deadline``."""
    if deadline is None:
        return WATCH_SECONDS
    return max(1, min(WATCH_SECONDS, int(deadline - time.monotonic()) + 1))


def _stream_events(
    resp: Any,
    what: str,
    cursor: _Cursor,
    on_resume: Callable[[str], None] | None,
    deadline: float | None,
) -> Generator[WatchEvent, None, bool]:
    """The events of one watch response, moving ``cursor`` on; returns True once ``deadline`` passed.

    A 410 Gone ends the response with ``cursor.rv`` cleared (relist and carry on from the fresh state).
    """
    for line in iter_lines(resp):
        if not line.strip():
            continue
        event = json.loads(line)
        obj = event.get("object") or {}
        if event.get("type") == "ERROR":
            if obj.get("code") == 410:
                cursor.rv = None
                if on_resume:
                    on_resume("watch expired (410 Gone); relisting")
                return False
            raise RanktableError(f"watching {what}: {obj.get('message') or obj}")
        cursor.rv = str((obj.get("metadata") or {}).get("resourceVersion") or cursor.rv)
        cursor.backoff = 0.2
        if event.get("type") != "BOOKMARK":
            yield WatchEvent(str(event.get("type")), obj)
        if deadline is not None and time.monotonic() >= deadline:
            return True
    return False


def interrupt(resp: Any) -> None:
    """End a blocked read on a streaming response from another thread (a watch or log follow).

    Closing a socket does not wake a thread blocked in recv() on Linux; shutting it down does.
    """
    with contextlib.suppress(Exception):
        shutdown = getattr(resp, "shutdown", None)  # urllib3 >= 2.3
        if shutdown is not None:
            shutdown()
        else:
            resp.close()
