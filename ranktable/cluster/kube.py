"""The connection to one cluster: an API client from an explicit kubeconfig and context, JSON calls with
read timeouts, Kubernetes errors turned into the product's errors, and a watch that resumes.

Nothing here touches the process-global kubernetes configuration, so several clusters (a real pool and
the simulated one) can be used side by side in one process (the Jupyter server).
"""

from __future__ import annotations

import contextlib
import json
import os
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client, config
from kubernetes.client.rest import ApiException
from urllib3.util.ssl_ import create_urllib3_context, resolve_cert_reqs

from ranktable.cluster.rest import CoreApi, CustomObjects
from ranktable.errors import ConflictError, InputError, NotFoundError, RanktableError, Unavailable
from ranktable.home import SHARED_SETTINGS_ENV

DEFAULT_TIMEOUT = (5.0, 30.0)
WATCH_SECONDS = 60
POOL_SIZE = 128
NETWORK_ERRORS = (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError)


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


def new_api_client(kubeconfig: str | None, context: str | None) -> client.ApiClient:
    path = resolve_kubeconfig(kubeconfig)
    if path is None:
        raise NotFoundError(
            "no cluster configured", where="kubeconfig ($KUBECONFIG, ~/.kube/config)", fix=NO_KUBECONFIG_FIX
        )
    if not Path(path).is_file():
        raise NotFoundError("kubeconfig not found", where=path, fix="pass --kubeconfig with an existing file")
    settings = client.Configuration()
    settings.connection_pool_maxsize = POOL_SIZE  # one connection per followed pod, without discards
    try:
        api = config.new_client_from_config(
            config_file=path, context=context, persist_config=False, client_configuration=settings
        )
    except config.ConfigException as exc:
        raise InputError(
            f"unusable kubeconfig: {exc}", where=path, fix="check the file and the --context name"
        ) from exc
    share_ssl_context(api)
    return api


def share_ssl_context(api: client.ApiClient) -> None:
    """One TLS context for every connection of the client, not one each.

    Given CA and client-certificate paths, urllib3 builds a context per connection and loads the CA file
    (and the key pair) into it again: ~18 KiB of OpenSSL memory and a file read per connection, 1,024 of
    them while a 1,024-pod job's logs are followed. The context is made here once from the same settings;
    urllib3 then only wraps sockets with it (it still sets the same verify mode and hostname check).
    """
    kw = api.rest_client.pool_manager.connection_pool_kw
    if kw.get("ssl_context") is not None or not str(api.configuration.host).startswith("https"):
        return
    context = create_urllib3_context(cert_reqs=resolve_cert_reqs(kw.get("cert_reqs")))
    ca_certs, ca_data = kw.pop("ca_certs", None), kw.pop("ca_cert_data", None)
    if ca_certs or ca_data:
        context.load_verify_locations(ca_certs, None, ca_data)
    elif context.verify_mode != ssl.CERT_NONE:
        context.load_default_certs()
    cert_file, key_file = kw.pop("cert_file", None), kw.pop("key_file", None)
    if cert_file:
        context.load_cert_chain(cert_file, key_file)
    kw["ssl_context"] = context


@dataclass
class Kube:
    """One API client plus the timeouts used on every call."""

    api: client.ApiClient
    timeout: tuple[float, float] = DEFAULT_TIMEOUT

    @property
    def core(self) -> CoreApi:
        return CoreApi(self.api)

    @property
    def custom(self) -> CustomObjects:
        return CustomObjects(self.api)

    @property
    def host(self) -> str:
        return str(self.api.configuration.host)

    def call(self, fn: Callable[..., Any], *args: Any, what: str, **kwargs: Any) -> dict[str, Any]:
        """Call an API method and return the decoded JSON body (no model classes in between)."""
        kwargs.setdefault("_request_timeout", self.timeout)
        try:
            resp = fn(*args, _preload_content=False, **kwargs)
            data = resp.data
        except ApiException as exc:
            if exc.status == 0:  # the client's own wrapper for TLS and connection failures
                raise self.unreachable(exc) from None
            raise api_error(exc, what) from None
        except NETWORK_ERRORS as exc:
            raise self.unreachable(exc) from None
        return json.loads(data) if data else {}

    def get_raw(self, path: str, query: list[tuple[str, Any]], timeout: tuple[float, float]) -> Any:
        """A streaming GET on a path the generated client lacks a parameter for (``sinceTime``)."""
        params = self.api.param_serialize(
            method="GET",
            resource_path=path,
            query_params=query,
            header_params={"Accept": "application/json, */*"},  # a real API server answers 406 to text/plain
            auth_settings=["BearerToken"],
        )
        resp = self.api.call_api(*params, _request_timeout=timeout)
        if not 200 <= resp.status <= 299:
            resp.read()
            raise ApiException.from_response(http_resp=resp, body=None, data=None)
        return resp.response

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
    if exc.status in (401, 403):
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
    rv: str | None = None
    backoff = 0.2
    halt = stop or threading.Event()
    while (deadline is None or time.monotonic() < deadline) and not halt.is_set():
        if rv is None:
            try:
                listing = kube.call(list_fn, *args, what=what, **selectors)
            except UnreachableError:
                if strict:
                    raise
                if on_resume:
                    on_resume("API server unreachable; retrying")
                halt.wait(backoff)
                backoff = min(backoff * 2, 5.0)
                continue
            rv = str((listing.get("metadata") or {}).get("resourceVersion") or "")
            if whole_lists:
                yield WatchEvent("LIST", listing)
            else:
                for item in listing.get("items") or []:
                    yield WatchEvent("SYNC", item)
        remaining = (
            WATCH_SECONDS
            if deadline is None
            else max(1, min(WATCH_SECONDS, int(deadline - time.monotonic()) + 1))
        )
        try:
            resp = list_fn(
                *args,
                watch=True,
                resource_version=rv,
                timeout_seconds=remaining,
                allow_watch_bookmarks=True,
                _preload_content=False,
                _request_timeout=(kube.timeout[0], remaining + kube.timeout[1]),
                **selectors,
            )
            if on_response is not None:
                on_response(resp)
            try:
                for line in iter_lines(resp):
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        if obj.get("code") == 410:
                            rv = None  # too old: relist and carry on from the fresh state
                            if on_resume:
                                on_resume("watch expired (410 Gone); relisting")
                            break
                        raise RanktableError(f"watching {what}: {obj.get('message') or obj}")
                    rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                    backoff = 0.2
                    if event.get("type") != "BOOKMARK":
                        yield WatchEvent(str(event.get("type")), obj)
                    if deadline is not None and time.monotonic() >= deadline:
                        return
            finally:
                if halt.is_set():
                    resp.close()  # interrupted: the connection is not reusable
                else:
                    resp.release_conn()
        except ApiException as exc:
            if exc.status == 410:
                rv = None
                continue
            raise api_error(exc, what) from None
        except NETWORK_ERRORS as exc:
            if halt.is_set():
                return
            if on_resume:
                on_resume(f"watch connection dropped ({type(exc).__name__}); resuming")
            if strict:
                rv = None  # relist: it raises if the API server is gone, and resyncs if it restarted
            halt.wait(backoff)
            backoff = min(backoff * 2, 5.0)


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
