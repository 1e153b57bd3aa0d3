"""A forward opened through the server (REST, the panel) is reachable by its owner only: a Unix socket of
mode 600 in a folder of mode 700, served at the authenticated `/ranktable/forwards/ID/proxy/` (#26.4).
Real sshd, a web app on the instance's loopback."""

from __future__ import annotations

import asyncio
import hashlib
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
import tornado.httpclient
import tornado.httpserver
import tornado.testing
import tornado.web
import tornado.websocket
from jupyter_server.auth.authorizer import AllowAllAuthorizer, Authorizer

from ranktable.server_ext.proxy import PROXY_MAX_BODY_BYTES
from tests.integration.fixtures.sshd import SshdProfile
from tests.integration.server_helpers import call

BIG = os.urandom(8 << 20)


class Echo(http.server.BaseHTTPRequestHandler):
    """Answers every method with what it was sent: method, path, body and the headers it saw."""

    protocol_version = "HTTP/1.1"  # so a response can be chunked

    def _answer(self) -> None:
        if self.path == "/big":
            self._chunked()
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        seen = {
            "method": self.command,
            "path": self.path,
            "body": body.decode(),
            "cookie": self.headers.get("Cookie"),
            "authorization": self.headers.get("Authorization"),
            "host": self.headers.get("Host"),
        }
        status = 404 if self.path.startswith("/missing") else 200
        data = b"<h1>TensorBoard</h1>" if self.path == "/" else json.dumps(seen).encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html" if self.path == "/" else "application/json")
        self.send_header("X-App", "tensorboard")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _chunked(self) -> None:
        """BIG in chunks of 64 KiB (Transfer-Encoding: chunked): the proxy re-frames it."""
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for start in range(0, len(BIG), 1 << 16):
            part = BIG[start : start + (1 << 16)]
            self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def echo_app() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


class DenyExecute(Authorizer):
    asked: ClassVar[list[tuple[str, str]]] = []

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        if "/proxy/" in handler.request.path:
            self.asked.append((action, resource))
        return not ("/proxy/" in handler.request.path and action == "execute")


@pytest.fixture
def authorizer(request: Any) -> type[Authorizer]:
    return getattr(request, "param", AllowAllAuthorizer)


@pytest.fixture
def jp_server_config(ranktable_home: Path, authorizer: type[Authorizer]) -> dict[str, Any]:
    return {
        "ServerApp": {"jpserver_extensions": {"ranktable": True}, "authorizer_class": authorizer},
        "Ranktable": {"state_dir": str(ranktable_home), "kubeconfig": "/nonexistent"},
    }


async def _open(jp_fetch: Any, port: int) -> dict[str, Any]:
    body = {"profile": "box", "remote_port": port}
    opened: dict[str, Any] = await call(
        jp_fetch, "ranktable", "forwards", method="POST", body=body, expect=201
    )
    return opened


@pytest.fixture
def fetch(http_server_client: Any, jp_base_url: str, jp_auth_header: dict[str, str]) -> Any:
    """A request to ``jp_base_url + path`` as is (jp_fetch drops the trailing slash a proxy path needs)."""

    async def fetch(path: str, *, auth: bool = True, **kwargs: Any) -> Any:
        headers = {**(jp_auth_header if auth else {}), **kwargs.pop("headers", {})}
        kwargs.setdefault("raise_error", False)
        kwargs.setdefault("allow_nonstandard_methods", True)
        return await http_server_client.fetch(jp_base_url + path, headers=headers, **kwargs)

    return fetch


def _proxy(opened: dict[str, Any], rest: str = "") -> str:
    return f"ranktable/forwards/{opened['id']}/proxy/{rest}"


def _listening_tcp_ports() -> set[int]:
    """The TCP ports this process listens on (other processes of the machine come and go meanwhile)."""
    mine = set()
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            mine.add(target[len("socket:[") : -1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in mine:  # LISTEN, one of ours
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


async def test_a_rest_forward_is_served_through_the_authenticated_proxy_path(
    jp_fetch: Any,
    fetch: Any,
    jp_base_url: str,
    jp_auth_header: dict[str, str],
    sshd_profile: SshdProfile,
    echo_app: int,
) -> None:
    opened = await _open(jp_fetch, echo_app)
    assert opened["bind"] == "unix" and opened["local_port"] == 0
    assert opened["proxy_path"] == f"/ranktable/forwards/{opened['id']}/proxy/"
    assert opened["url"] == jp_base_url.rstrip("/") + opened["proxy_path"]

    page = await fetch(_proxy(opened))
    assert page.code == 200 and page.body == b"<h1>TensorBoard</h1>"
    assert page.headers["X-App"] == "tensorboard" and page.headers["Content-Type"] == "text/html"

    cookies = {"Cookie": "app=1; _xsrf=2|3"}  # the Jupyter server's own cookies stay with it
    got = await fetch(_proxy(opened, "data/runs?tag=loss&run=a+b"), headers=cookies)
    seen = json.loads(got.body)
    assert seen["method"] == "GET" and seen["path"] == "/data/runs?tag=loss&run=a+b"
    assert seen["host"] == f"127.0.0.1:{echo_app}" and seen["cookie"] == "app=1"
    assert seen["authorization"] is None  # the Jupyter token stays with the Jupyter server
    token = jp_auth_header["Authorization"].split()[-1]
    by_query = await fetch(_proxy(opened, f"data?token={token}&run=b"), auth=False)
    assert json.loads(by_query.body)["path"] == "/data?run=b"  # nor does it go in the query

    payload = json.dumps({"x": [1, 2, 3]})
    for method in ("POST", "PUT", "PATCH"):
        sent = await fetch(_proxy(opened, "api?q=1"), method=method, body=payload)
        assert sent.code == 200
        want = {**seen, "method": method, "path": "/api?q=1", "body": payload, "cookie": None}
        assert json.loads(sent.body) == want
    removed = json.loads((await fetch(_proxy(opened, "api/x%2Fy"), method="DELETE")).body)
    assert removed["method"] == "DELETE" and removed["path"] == "/api/x%2Fy"  # the encoding kept

    head = await fetch(_proxy(opened), method="HEAD")
    assert head.code == 200 and head.body == b"" and head.headers["Content-Length"] == "20"
    missing = await fetch(_proxy(opened, "missing"))
    assert missing.code == 404 and json.loads(missing.body)["path"] == "/missing"  # the app's own 404
    too_big = await fetch(_proxy(opened, "api"), method="POST", body=b"x" * (PROXY_MAX_BODY_BYTES + 1))
    assert too_big.code == 413 and json.loads(too_big.body)["message"]

    listed = (await call(jp_fetch, "ranktable", "forwards"))["forwards"]
    assert [(f["id"], f["url"]) for f in listed] == [(opened["id"], opened["url"])]


async def test_a_large_chunked_response_streams_through_whole(
    jp_fetch: Any, fetch: Any, sshd_profile: SshdProfile, echo_app: int
) -> None:
    opened = await _open(jp_fetch, echo_app)
    chunks: list[bytes] = []
    big = await fetch(_proxy(opened, "big"), streaming_callback=chunks.append, request_timeout=60)
    assert big.code == 200 and big.headers["Content-Type"] == "application/octet-stream"
    assert "Content-Length" not in big.headers  # re-framed by the server, never buffered whole
    assert len(chunks) > 1 and hashlib.sha256(b"".join(chunks)).digest() == hashlib.sha256(BIG).digest()


async def test_the_socket_is_its_owners_alone_and_no_tcp_port_opens(
    jp_fetch: Any, fetch: Any, sshd_profile: SshdProfile, echo_app: int
) -> None:
    before = _listening_tcp_ports()
    opened = await _open(jp_fetch, echo_app)
    path = Path(opened["socket"])
    assert path.is_socket() and path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700 and path.parent.stat().st_uid == os.getuid()
    assert len(os.fsencode(str(path))) <= 107
    assert before and _listening_tcp_ports() - before == set()  # no 127.0.0.1 listener for it

    with socket.socket(socket.AF_UNIX) as sock:  # its owner can connect
        sock.connect(str(path))
    if os.getuid() == 0:  # another uid cannot, even to the socket itself
        code = f"import socket; socket.socket(socket.AF_UNIX).connect({str(path)!r})"
        other = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert other.returncode != 0 and "PermissionError" in other.stderr, other.stderr

    await call(jp_fetch, "ranktable", "forwards", opened["id"], method="DELETE")
    assert not path.exists()
    gone = await fetch(_proxy(opened))
    assert gone.code == 404
    assert json.loads(gone.body)["field"] == "forward" and "message" in json.loads(gone.body)


async def test_a_local_port_asked_for_is_a_tcp_forward_and_not_proxied(
    jp_fetch: Any, fetch: Any, sshd_profile: SshdProfile, echo_app: int
) -> None:
    body = {"profile": "box", "remote_port": echo_app, "local_port": 0}
    opened = await call(jp_fetch, "ranktable", "forwards", method="POST", body=body, expect=201)
    assert opened["bind"] == "127.0.0.1" and "proxy_path" not in opened and "socket" not in opened
    assert opened["url"] == f"http://127.0.0.1:{opened['local_port']}/"
    refused = await fetch(_proxy(opened))
    assert refused.code == 404 and json.loads(refused.body)["field"] == "forward"
    for unknown in ("fwd-99", f"{opened['id']}@{os.getpid()}", "fwd-1@1"):
        answer = await fetch(f"ranktable/forwards/{unknown}/proxy/")
        assert answer.code == 404 and json.loads(answer.body)["field"] == "forward"
    await call(jp_fetch, "ranktable", "forwards", opened["id"], method="DELETE")


async def test_the_proxy_needs_authentication(
    jp_fetch: Any, fetch: Any, sshd_profile: SshdProfile, echo_app: int
) -> None:
    opened = await _open(jp_fetch, echo_app)
    for method in ("GET", "POST"):
        body = "{}" if method == "POST" else None
        anonymous = await fetch(_proxy(opened), auth=False, method=method, body=body)
        assert anonymous.code == 403 and b"TensorBoard" not in anonymous.body


@pytest.mark.parametrize("authorizer", [DenyExecute], indirect=True)
async def test_the_proxy_asks_for_execute_on_ranktable(
    jp_fetch: Any, fetch: Any, sshd_profile: SshdProfile, echo_app: int
) -> None:
    opened = await _open(jp_fetch, echo_app)  # allowed: this authorizer refuses `execute` on the proxy only
    DenyExecute.asked.clear()
    for method in ("GET", "POST"):
        body = "{}" if method == "POST" else None
        refused = await fetch(_proxy(opened), method=method, body=body)
        assert refused.code == 403 and "not authorized" in json.loads(refused.body)["message"]
    assert DenyExecute.asked == [("execute", "ranktable")] * 2


class EchoSocket(tornado.websocket.WebSocketHandler):
    def on_message(self, message: str | bytes) -> None:
        self.write_message(f"echo {message}")


@pytest.fixture
def ws_app() -> Iterator[int]:
    """A WebSocket echo on the instance's loopback (the sshd runs on this machine), on its own loop."""
    sock, port = tornado.testing.bind_unused_port()
    loop = asyncio.new_event_loop()
    started = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)

        async def start() -> None:
            server = tornado.httpserver.HTTPServer(tornado.web.Application([(r"/ws", EchoSocket)]))
            server.add_sockets([sock])
            started.set()

        loop.run_until_complete(start())
        loop.run_forever()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    started.wait(10)
    yield port
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)


async def test_a_websocket_is_tunnelled_for_its_owner_and_refused_cross_origin(
    jp_fetch: Any,
    jp_http_port: int,
    jp_base_url: str,
    jp_auth_header: dict[str, str],
    sshd_profile: SshdProfile,
    ws_app: int,
) -> None:
    opened = await _open(jp_fetch, ws_app)
    url = f"ws://127.0.0.1:{jp_http_port}{jp_base_url}{_proxy(opened, 'ws')}"
    ws = await tornado.websocket.websocket_connect(
        tornado.httpclient.HTTPRequest(url, headers=jp_auth_header)
    )
    try:
        for text in ("hello", "again"):
            await ws.write_message(text)
            assert await asyncio.wait_for(ws.read_message(), 20) == f"echo {text}"
    finally:
        ws.close()
    for headers in ({}, {**jp_auth_header, "Origin": "http://evil.example"}):
        with pytest.raises(tornado.httpclient.HTTPClientError) as refused:
            await tornado.websocket.websocket_connect(tornado.httpclient.HTTPRequest(url, headers=headers))
        assert refused.value.code == 403


def test_a_home_too_long_for_a_socket_falls_back_to_a_private_runtime_or_temp_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ranktable.remote import forwards

    home = tmp_path / ("h" * 100)
    monkeypatch.setenv("RANKTABLE_HOME", str(home))
    monkeypatch.setattr(forwards, "_sockets", None)
    runtime = tmp_path / "run"
    runtime.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    chosen = forwards._socket_dir()
    assert chosen == runtime / f"ranktable-{os.getuid()}" and chosen.stat().st_mode & 0o777 == 0o700
    assert not (home / "fwd").exists()

    monkeypatch.setattr(forwards, "_sockets", None)
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    temp = forwards._socket_dir()
    try:
        assert temp.name.startswith("rt-fwd-") and temp.stat().st_mode & 0o777 == 0o700
        assert forwards._socket_dir() == temp  # one per process
    finally:
        temp.rmdir()

    monkeypatch.setenv("RANKTABLE_HOME", str(tmp_path / "short"))
    short = forwards._socket_dir()
    assert short == tmp_path / "short" / "fwd" and short.stat().st_mode & 0o777 == 0o700
