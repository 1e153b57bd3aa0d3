"""The HTTP front: Kubernetes REST paths, bearer-token auth, JSON bodies, chunked watch and log streams.

Speaks HTTP/1.1 with keep-alive (the Python client pools connections) on 127.0.0.1 only.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import hmac
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

from ranktable.sim.k8s import discovery, errors, openapi, protobuf, rbac, tables, validation
from ranktable.sim.k8s.patch import apply_patch
from ranktable.sim.k8s.resources import BY_KEY, ResourceType
from ranktable.sim.k8s.routes import Route, parse_bool, resolve
from ranktable.sim.k8s.selectors import parse_field_selector, parse_label_selector
from ranktable.sim.k8s.store import Obj, Store
from ranktable.sim.k8s.streams import PolledWriter, StreamingHandler
from ranktable.sim.k8s.websocket import WebSocket

OPEN_PATHS = {"/healthz", "/livez", "/readyz"}
DRY_RUN_VALUES = ("All",)


@dataclass(frozen=True)
class Limits:
    """What one client can cost the server. The body cap is the real API server's (3 MiB)."""

    max_body_bytes: int = 3 * 1024 * 1024
    request_seconds: float = 30.0  # the TLS handshake, the request line and headers, the body: each
    max_connections: int | None = None  # one thread each; more are closed at once (None: `connections_for`)

    def connections_for(self, nodes: int) -> int:
        """The connection cap: `max_connections`, or by default 256 and, on pools over 96 nodes, 2 per node
        + 64 (a log follower per pod, as `kubectl logs -f -l ...` or the Job view open, plus watches)."""
        if self.max_connections is not None:
            return self.max_connections
        return max(256, 2 * nodes + 64)


class _YamlLoader(yaml.SafeLoader):
    """Safe YAML without aliases: `*ref` expansion turns a few hundred bytes into gigabytes of JSON."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise yaml.YAMLError("YAML aliases (*name) are not accepted in request bodies")
        return super().compose_node(parent, index)


class ConnectionGate:
    """Which connections hold a thread: at most `total`; those not yet authenticated (no request with the
    token so far: a TLS handshake, headers or a body still coming) at most `total - reserve`, and at most
    half of those from one client address. A new connection beyond a cap closes the oldest unauthenticated
    one (of its client first) rather than itself: a slowloris then only evicts its own connections, and
    kubectl, which authenticates within milliseconds, keeps a slot (#26.8: 109 half-open connections
    filled the cap, and kubectl got EOF for 30 s at a time)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.reserve = max(1, total // 4)  # only for authenticated connections
        self.half_open_cap = max(1, total - self.reserve)
        self.per_client_cap = max(1, self.half_open_cap // 2)
        self._half_open: dict[Any, str] = {}  # socket -> client address, oldest first
        self._authenticated: set[Any] = set()
        self._lock = threading.Lock()
        self.evicted = 0

    def admit(self, sock: Any, client: str) -> bool:
        """Take a slot for a new connection (False: every slot is authenticated, close it)."""
        victims = []
        with self._lock:
            mine = [s for s, c in self._half_open.items() if c == client]
            if len(mine) >= self.per_client_cap:
                victims.append(mine[0])
            elif len(self._half_open) >= self.half_open_cap:
                victims.append(next(iter(self._half_open)))
            elif len(self._half_open) + len(self._authenticated) >= self.total:
                if not self._half_open:
                    return False
                victims.append(next(iter(self._half_open)))
            for victim in victims:
                del self._half_open[victim]  # its thread ends as its socket is shut; `release` then no-ops
            self._half_open[sock] = client
            self.evicted += len(victims)
        for victim in victims:
            hang_up(victim)
        return True

    def authenticated(self, sock: Any) -> None:
        with self._lock:
            if self._half_open.pop(sock, None) is not None:
                self._authenticated.add(sock)

    def release(self, sock: Any) -> None:
        with self._lock:
            self._half_open.pop(sock, None)
            self._authenticated.discard(sock)

    def threads(self) -> int:
        with self._lock:
            return len(self._half_open) + len(self._authenticated)


class _BoundedServer(ThreadingHTTPServer):
    """A thread per connection, as many as the `ConnectionGate` admits: beyond that a connection is closed."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: Any, max_connections: int) -> None:
        self.gate = ConnectionGate(max_connections)
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.gate.admit(request, str(client_address[0])):
            hang_up(request)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except Exception:
            self.gate.release(request)
            raise

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up or never finishes its TLS handshake is not the server's error."""

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.gate.release(request)


LogReader = Callable[[Obj, dict[str, str]], Iterable[bytes]]
Deleter = Callable[[ResourceType, Obj, dict[str, Any]], Obj | None]
Admitter = Callable[[ResourceType, Obj, str], None]
Executor = Callable[[Obj, dict[str, list[str]], WebSocket, str], None]


@dataclass
class Hooks:
    """What the controllers plug into the API: pod logs, graceful pod deletion, admission.

    `read_log` gives the body's chunks; one that is a `streams.PolledLog` (the synthetic logs) is sent
    by the server's shared writer thread instead of the request's own."""

    read_log: LogReader | None = None
    execute: Executor | None = None
    delete: Deleter | None = None
    admit: list[Admitter] = field(default_factory=list)


def hang_up(sock: Any) -> None:
    """Close a connection without an answer, as a server that went away does."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class ApiServer:
    """State shared by all request threads: the store, the token, the hooks."""

    def __init__(
        self,
        store: Store,
        token: str,
        hooks: Hooks | None = None,
        limits: Limits | None = None,
        nodes: int = 0,
        users: dict[str, rbac.SimUser] | None = None,
    ) -> None:
        self.store = store
        self.token = token
        self.users = dict(users or {})  # bearer token -> a team member (`sim start --user`)
        self.hooks = hooks or Hooks()
        self.limits = limits or Limits()
        self.nodes = nodes  # the pool's size: the default connection cap grows with it
        self.stopping = threading.Event()
        self.polled_writer = PolledWriter(self.stopping)  # sends every synthetic log body (one thread)
        self.httpd: ThreadingHTTPServer | None = None
        self.connections: set[Any] = set()
        self._conn_lock = threading.Lock()

    # -- lifecycle ------------------------------------------------------------------------------------
    def bind(self, port: int, cert: Path, key: Path) -> int:
        api = self

        class Handler(RequestHandler):
            server_api = api

        self.httpd = _BoundedServer(("127.0.0.1", port), Handler, self.limits.connections_for(self.nodes))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        # the handshake runs in the request thread (see RequestHandler.setup), not in the accept loop
        self.httpd.socket = context.wrap_socket(
            self.httpd.socket, server_side=True, do_handshake_on_connect=False
        )
        return int(self.httpd.server_address[1])

    def serve_forever(self) -> None:
        assert self.httpd is not None
        self.httpd.serve_forever(poll_interval=0.2)

    def shutdown(self) -> None:
        """Stop accepting, then cut every open connection (streams included), as a dying server does."""
        self.stopping.set()
        self.store.poke()
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
        with self._conn_lock:
            connections = list(self.connections)
        for sock in connections:
            hang_up(sock)

    def track(self, sock: Any, open_: bool) -> None:
        with self._conn_lock:
            if open_:
                self.connections.add(sock)
            else:
                self.connections.discard(sock)
        if open_ and self.stopping.is_set():
            hang_up(sock)  # accepted during shutdown, after the cut: a dying server serves nothing more

    # -- request handling ----------------------------------------------------------------------------
    def list_objects(self, route: Route, query: dict[str, str]) -> tuple[list[Obj], int]:
        labels = parse_label_selector(query.get("labelSelector"))
        fields = parse_field_selector(query.get("fieldSelector"), route.rtype.plural)
        rv = query.get("resourceVersion")
        if rv and query.get("resourceVersionMatch") == "Exact" and int(rv) < self.store.resource_version:
            self.store.events_since(route.rtype.key, int(rv))  # raises 410 when too old
        return self.store.list(route.rtype, route.namespace, lambda o: labels(o) and fields(o))

    def admit(self, rtype: ResourceType, obj: Obj, operation: str) -> None:
        for admitter in self.hooks.admit:
            admitter(rtype, obj, operation)


def access_review(review: Any, user: rbac.SimUser = rbac.ADMIN) -> dict[str, Any]:
    """`kubectl auth can-i`: the pool's token may do everything; a team member what its role allows."""
    if not isinstance(review, dict) or not isinstance(review.get("spec"), dict):
        raise errors.invalid(
            "SelfSubjectAccessReview",
            "authorization.k8s.io",
            "",
            [("spec", "Required value: resourceAttributes or nonResourceAttributes")],
        )
    return {
        "kind": "SelfSubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {"creationTimestamp": None},
        "spec": review["spec"],
        "status": rbac.review(user, review["spec"])
        if user is not rbac.ADMIN
        else {"allowed": True, "reason": "the simulated pool's token is its administrator"},
    }


def _dry_run(query: dict[str, str]) -> bool:
    return query.get("dryRun") in DRY_RUN_VALUES


def _dry_run_options(options: Any) -> bool:
    """DeleteOptions carry dryRun in the body (`{"dryRun": ["All"]}`), as kubectl sends it."""
    values = options.get("dryRun") if isinstance(options, dict) else None
    if values is None:
        return False
    if not isinstance(values, list) or any(v not in DRY_RUN_VALUES for v in values):
        raise errors.bad_request(f'dryRun: Unsupported value: {values!r}: supported values: "All"')
    return bool(values)


class RequestHandler(StreamingHandler):
    """One HTTP request. Errors become `Status` bodies; streams are chunked."""

    protocol_version = "HTTP/1.1"
    server_api: ApiServer
    user: rbac.SimUser = rbac.ADMIN

    def setup(self) -> None:
        sock = self.request
        self.server_api.track(sock, True)
        # every read and write of the request has this long (a half-open request is dropped)
        sock.settimeout(self.server_api.limits.request_seconds)
        if isinstance(sock, ssl.SSLSocket):
            sock.do_handshake()
        super().setup()

    def handle(self) -> None:
        try:
            super().handle()
        except (ssl.SSLError, OSError):
            self.close_connection = True

    def finish(self) -> None:
        self.server_api.track(self.request, False)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        return  # quiet: the pool's own log is the events

    # -- plumbing -----------------------------------------------------------------------------------
    def _send_json(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _send_ok_bytes(self, data: bytes, content_type: str) -> None:
        """A 200 with a body that is not JSON (health checks, the protobuf OpenAPI document)."""
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, err: errors.ApiError) -> None:
        self._send_json(err.code, err.status(), {"Connection": "close"} if self.close_connection else None)

    def _too_large(self) -> errors.ApiError:
        self.close_connection = True  # the rest of the body is not read
        limit = self.server_api.limits.max_body_bytes
        return errors.ApiError(
            413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit} bytes"
        )

    def _body_timeout(self) -> errors.ApiError:
        self.close_connection = True
        seconds = self.server_api.limits.request_seconds
        return errors.ApiError(408, "Timeout", f"the request body was not received within {seconds:g}s")

    def _read_exactly(self, size: int, deadline: float) -> bytes:
        parts, left = [], size
        while left > 0:
            if time.monotonic() > deadline:
                raise self._body_timeout()
            try:
                part = self.rfile.read1(min(left, 65536))
            except TimeoutError as exc:
                raise self._body_timeout() from exc
            if not part:
                self.close_connection = True
                raise errors.bad_request("the request body ended early")
            parts.append(part)
            left -= len(part)
        return b"".join(parts)

    def _raw_body(self) -> bytes:
        limit = self.server_api.limits.max_body_bytes
        deadline = time.monotonic() + self.server_api.limits.request_seconds
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                line = self.rfile.readline(64)
                try:
                    size = int(line.split(b";")[0].strip() or b"0", 16)
                except ValueError as exc:
                    self.close_connection = True
                    raise errors.bad_request("malformed chunked request body") from exc
                if size == 0:
                    self.rfile.readline(64)
                    return out
                if len(out) + size > limit:
                    raise self._too_large()
                out += self._read_exactly(size, deadline)
                self.rfile.readline(64)
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError as exc:
            self.close_connection = True
            raise errors.bad_request("invalid Content-Length") from exc
        if length > limit:
            raise self._too_large()
        return self._read_exactly(length, deadline) if length > 0 else b""

    def _body(self) -> Any:
        raw = self._raw_body()
        if not raw.strip():
            return None
        ctype = (self.headers.get("Content-Type") or "application/json").split(";")[0].strip()
        if ctype == protobuf.MEDIA_TYPE:
            return protobuf.decode(raw)
        try:
            if ctype in ("application/yaml", "application/apply-patch+yaml"):
                return yaml.load(raw, Loader=_YamlLoader)  # noqa: S506 - a SafeLoader without aliases
            return json.loads(raw)
        except RecursionError as exc:
            raise errors.bad_request("the request body is nested too deeply") from exc
        except (ValueError, yaml.YAMLError) as exc:
            raise errors.bad_request(f"the request body could not be decoded: {exc}") from exc

    def _authorised(self, path: str) -> bool:
        """Whether the bearer token is the pool's or a team member's (then `self.user` is that member)."""
        self.user = rbac.ADMIN
        if path in OPEN_PATHS:
            return True
        header = self.headers.get("Authorization") or ""
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer":
            return False
        if hmac.compare_digest(token.strip(), self.server_api.token):
            return True
        for known, user in self.server_api.users.items():
            if hmac.compare_digest(token.strip(), known):
                self.user = user
                return True
        return False

    def _authorize(self, route: Route, query: dict[str, str]) -> None:
        """RBAC for a team member's request (the pool's own token may do everything)."""
        if self.user is rbac.ADMIN or not route.rtype.stored:
            return
        verb = rbac.verb_of(self.command, route.name is not None, parse_bool(query.get("watch")))
        if route.subresource in ("exec", "attach", "portforward"):
            verb = "create"  # what the API server authorizes a websocket upgrade as
        resource = route.rtype.plural + (f"/{route.subresource}" if route.subresource else "")
        namespace = route.namespace if route.rtype.namespaced else None
        if not rbac.allowed(self.user, verb, namespace, resource)[0]:
            raise rbac.forbidden(self.user, verb, namespace, resource, route.rtype.group)

    def _dispatch(self) -> None:
        if self.server_api.stopping.is_set():
            # The store behind a stopped server is frozen (in one process it outlives a restart): a
            # request that still reaches it gets no answer, so the client reconnects to the new server.
            self.close_connection = True
            hang_up(self.connection)
            return
        url = urlsplit(self.path)
        path = url.path.rstrip("/") or "/"
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        body_needed = self.command in ("POST", "PUT", "PATCH", "DELETE")
        try:
            if not self._authorised(path):
                # nothing of the request is read or parsed before the token is checked
                self.close_connection = body_needed
                raise errors.unauthorized()
            if path not in OPEN_PATHS:
                self.server.gate.authenticated(self.request)  # type: ignore[attr-defined]
            body = self._body() if body_needed else None  # always drain the body (keep-alive)
            if query.get("dryRun") not in (None, *DRY_RUN_VALUES):
                raise errors.bad_request(
                    f'dryRun: Unsupported value: "{query["dryRun"]}": supported values: "All"'
                )
            self._route(path, query, body)
        except errors.ApiError as err:
            self._send_error(err)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # a bug must still answer like an API server, not drop the connection
            self.close_connection = True
            with contextlib.suppress(OSError):
                self._send_error(errors.ApiError(500, "InternalError", f"Internal error occurred: {exc!r}"))

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _dispatch

    # -- routing --------------------------------------------------------------------------------------
    def _route(self, path: str, query: dict[str, str], body: Any) -> None:
        api = self.server_api
        if path in OPEN_PATHS:
            self._send_ok_bytes(b"ok", "text/plain; charset=utf-8")
            return
        if path == "/openapi/v2":
            self._send_ok_bytes(openapi.v2_protobuf(), "application/octet-stream")
            return
        static = self._static(path)
        if static is not None:
            if self.command not in ("GET", "HEAD"):
                raise errors.method_not_allowed()
            self._send_json(200, static)
            return
        route = resolve(path)
        if route is None:
            raise errors.ApiError(
                404,
                "NotFound",
                "the server could not find the requested resource",
                {"causes": [{"reason": "UnexpectedServerResponse", "message": "404 page not found"}]},
            )
        method = self.command
        if not route.rtype.stored and method != "POST":
            raise errors.method_not_allowed()
        self._authorize(route, query)
        if route.subresource == "exec":
            self._exec(route)
            return
        if method in ("GET", "HEAD"):
            if route.name is None:
                if parse_bool(query.get("watch")):
                    self._watch(route, query)
                else:
                    self._list(route, query)
            elif route.subresource == "log":
                self._log(route, query)
            else:
                obj = api.store.get(route.rtype, route.namespace, route.name)
                self._send_json(200, self._maybe_table(route.rtype, [obj], query, single=True))
        elif method == "POST" and route.name is None:
            self._create(route, query, body)
        elif method == "PUT" and route.name is not None:
            self._update(route, query, body)
        elif method == "PATCH" and route.name is not None:
            self._patch(route, query, body)
        elif method == "DELETE":
            if route.name is None:
                self._delete_collection(route, query, body)
            else:
                self._delete(route, query, body)
        else:
            raise errors.method_not_allowed()

    def _static(self, path: str) -> Any:
        host = self.headers.get("Host") or "127.0.0.1"
        if path == "/version":
            return discovery.SERVER_VERSION
        if path == "/api":
            return discovery.api_versions(host)
        if path == "/apis":
            return discovery.api_group_list()
        if path == "/api/v1":
            return discovery.resource_list("v1")
        if path == "/openapi/v3":
            return openapi.index()
        if path.startswith("/openapi/v3/"):
            doc = openapi.document(path.removeprefix("/openapi/v3/"))
            if doc is None:
                raise errors.ApiError(404, "NotFound", "the server could not find the requested resource")
            return doc
        parts = [p for p in path.split("/") if p]
        if len(parts) == 2 and parts[0] == "apis":
            group = discovery.api_group(parts[1])
            if group is None:
                raise errors.ApiError(404, "NotFound", "the server could not find the requested resource")
            return group
        if len(parts) == 3 and parts[0] == "apis":
            return discovery.resource_list(f"{parts[1]}/{parts[2]}") or self._not_found_page()
        return None

    @staticmethod
    def _not_found_page() -> Any:
        raise errors.ApiError(404, "NotFound", "the server could not find the requested resource")

    def _maybe_table(
        self,
        rtype: ResourceType,
        items: list[Obj],
        query: dict[str, str],
        single: bool,
        rv: int | None = None,
    ) -> Any:
        accept = self.headers.get("Accept") or ""
        if tables.wants_table(accept):
            return tables.table(
                rtype,
                items,
                rv or self.server_api.store.resource_version,
                query.get("includeObject", "Metadata"),
            )
        if single:
            return items[0]
        return {
            "kind": f"{rtype.kind}List",
            "apiVersion": rtype.api_version,
            "metadata": {"resourceVersion": str(rv)},
            "items": items,
        }

    # -- verbs ----------------------------------------------------------------------------------------
    def _list(self, route: Route, query: dict[str, str]) -> None:
        items, rv = self.server_api.list_objects(route, query)
        token = query.get("continue")
        if token:  # pages are cut by (namespace, name), which is the order lists come in
            try:
                start = json.loads(base64.urlsafe_b64decode(token.encode()))
            except ValueError as exc:
                raise errors.bad_request(f"invalid continue token: {exc}") from exc
            items = [o for o in items if [o["metadata"].get("namespace", ""), o["metadata"]["name"]] > start]
        limit = int(query.get("limit") or 0)
        next_token, remaining = "", 0
        if limit and len(items) > limit:
            remaining = len(items) - limit
            items = items[:limit]
            last = items[-1]["metadata"]
            position = json.dumps([last.get("namespace", ""), last["name"]]).encode()
            next_token = base64.urlsafe_b64encode(position).decode()
        body = self._maybe_table(route.rtype, items, query, single=False, rv=rv)
        if next_token:
            body["metadata"]["continue"] = next_token
            body["metadata"]["remainingItemCount"] = remaining
        self._send_json(200, body)

    def _field_validation(self, route: Route, query: dict[str, str], obj: Any) -> dict[str, str]:
        """Strict -> 400 listing unknown fields (as the real decoder does); Warn -> Warning headers."""
        if not isinstance(obj, dict):
            raise errors.bad_request("the request body must be a JSON object")
        mode = query.get("fieldValidation") or "Warn"
        if mode == "Ignore":
            return {}
        unknown = validation.unknown_fields(route.rtype, obj)
        if not unknown:
            return {}
        if mode == "Strict":
            listed = ", ".join(f'unknown field "{u}"' for u in unknown)
            raise errors.bad_request(
                f'{route.rtype.kind} in version "{route.rtype.version}" cannot be handled as '
                f"a {route.rtype.kind}: strict decoding error: {listed}"
            )
        return {"Warning": ", ".join(f'299 - "unknown field \\"{u}\\""' for u in unknown)}

    def _check_body_identity(self, route: Route, obj: Obj) -> None:
        meta = obj.setdefault("metadata", {})
        if route.rtype.namespaced:
            ns = meta.get("namespace")
            if ns and route.namespace and ns != route.namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = route.namespace or ns or "default"
        kind, api_version = obj.get("kind"), obj.get("apiVersion")
        if (kind and kind != route.rtype.kind) or (api_version and api_version != route.rtype.api_version):
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected "
                f"API version ({route.rtype.api_version}) or kind ({kind})"
            )

    def _validate(self, route: Route, obj: Obj, operation: str) -> None:
        rtype = route.rtype
        name = obj["metadata"].get("name") or ""
        causes = (
            []
            if (not name and obj["metadata"].get("generateName"))
            else validation.validate_name(rtype, name)
        )
        namespaces = BY_KEY["namespaces"]
        if (
            rtype.namespaced
            and route.namespace
            and operation == "CREATE"
            and self.server_api.store.find(namespaces, None, route.namespace) is None
        ):
            raise errors.not_found("namespaces", "", route.namespace)
        if rtype.key == "pods":
            causes += validation.validate_pod_spec(obj.get("spec"), "spec.")
        if causes:
            raise errors.invalid(rtype.kind, rtype.group, name, causes)
        self.server_api.admit(rtype, obj, operation)

    def _create(self, route: Route, query: dict[str, str], body: Any) -> None:
        if not route.rtype.stored:
            self._send_json(201, access_review(body, self.user))
            return
        warn = self._field_validation(route, query, body)
        obj = copy.deepcopy(body)
        self._check_body_identity(route, obj)
        for key in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "generation"):
            obj["metadata"].pop(key, None)
        self._validate(route, obj, "CREATE")
        if route.rtype.key == "namespaces":  # what the namespace registry fills in
            obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
            obj["status"] = {"phase": "Active"}
            if obj["metadata"].get("name"):
                labels = obj["metadata"].setdefault("labels", {})
                labels["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
        created = self.server_api.store.create(route.rtype, obj, dry_run=_dry_run(query))
        self._send_json(201, created, warn)

    def _update(self, route: Route, query: dict[str, str], body: Any) -> None:
        warn = self._field_validation(route, query, body)
        obj = copy.deepcopy(body)
        self._check_body_identity(route, obj)
        if obj["metadata"].get("name") != route.name:
            raise errors.bad_request("the name of the object does not match the name on the URL")
        self._validate(route, obj, "UPDATE")
        updated = self.server_api.store.update(
            route.rtype, obj, status_only=route.subresource == "status", dry_run=_dry_run(query)
        )
        self._send_json(200, updated, warn)

    def _patch(self, route: Route, query: dict[str, str], body: Any) -> None:
        store = self.server_api.store
        ctype = self.headers.get("Content-Type") or ""
        if ctype.startswith("application/apply-patch"):
            # server-side apply, simplified: create if absent, else merge (no field ownership tracking)
            if not query.get("fieldManager"):
                raise errors.bad_request("PATCH, application/apply-patch+yaml: fieldManager is required")
            if store.find(route.rtype, route.namespace, route.name or "") is None:
                if isinstance(body, dict):
                    body.setdefault("metadata", {})["name"] = route.name
                self._create(route, query, body)
                return
            ctype = "application/merge-patch+json"
        current = store.get(route.rtype, route.namespace, route.name or "")
        patched = apply_patch(ctype, current, body, route.rtype.builtin)
        if not isinstance(patched, dict):
            raise errors.bad_request("the patch did not produce an object")
        warn = self._field_validation(route, query, patched)
        patched.setdefault("metadata", {})
        patched["metadata"]["name"] = route.name
        if route.rtype.namespaced:
            patched["metadata"]["namespace"] = route.namespace
        self._validate(route, patched, "UPDATE")
        check_rv = "resourceVersion" in (body.get("metadata") or {}) if isinstance(body, dict) else False
        if not check_rv:
            patched["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        updated = store.update(
            route.rtype, patched, status_only=route.subresource == "status", dry_run=_dry_run(query)
        )
        self._send_json(200, updated, warn)

    def _delete(self, route: Route, query: dict[str, str], body: Any) -> None:
        options: dict[str, Any] = dict(body) if isinstance(body, dict) else {}
        if "gracePeriodSeconds" in query:
            options["gracePeriodSeconds"] = int(query["gracePeriodSeconds"])
        if "propagationPolicy" in query:
            options["propagationPolicy"] = query["propagationPolicy"]
        store = self.server_api.store
        obj = store.get(route.rtype, route.namespace, route.name or "")
        precondition = (options.get("preconditions") or {}).get("uid")
        if precondition and precondition != obj["metadata"]["uid"]:
            raise errors.conflict(route.rtype.plural, route.rtype.group, route.name or "")
        if _dry_run(query) or _dry_run_options(options):
            self._send_json(200, obj)  # what would be deleted; nothing is
            return
        result = (
            self.server_api.hooks.delete(route.rtype, obj, options) if self.server_api.hooks.delete else None
        )
        if result is not None:
            self._send_json(200, result)  # graceful: still there, with deletionTimestamp
            return
        deleted = store.delete(route.rtype, route.namespace, route.name or "")
        self._send_json(200, deleted)

    def _delete_collection(self, route: Route, query: dict[str, str], body: Any) -> None:
        items, _rv = self.server_api.list_objects(route, query)
        store = self.server_api.store
        dry_run = _dry_run(query) or _dry_run_options(body)
        for obj in [] if dry_run else items:
            meta = obj["metadata"]
            handled = (
                self.server_api.hooks.delete(route.rtype, obj, body or {})
                if self.server_api.hooks.delete
                else None
            )
            if handled is None:
                with contextlib.suppress(errors.ApiError):
                    store.delete(route.rtype, meta.get("namespace"), meta["name"])
        self._send_json(
            200,
            {
                "kind": f"{route.rtype.kind}List",
                "apiVersion": route.rtype.api_version,
                "metadata": {"resourceVersion": str(store.resource_version)},
                "items": items,
            },
        )
