"""The kubelet API the real kube-apiserver calls for `kubectl logs` and `kubectl exec` (HTTPS, one port).

Paths as the real kubelet's: `/containerLogs/<ns>/<pod>/<container>?follow&previous&timestamps&sinceTime
&sinceSeconds&tailLines&limitBytes` (chunked `text/plain`, flushed per line) and `/exec/<ns>/<pod>/
<container>?command=...` (WebSocket, `v5`/`v4.channel.k8s.io`; the API server is started with
`TranslateStreamCloseWebsocketRequests=false` so it passes kubectl's WebSocket through instead of
translating it to SPDY). Only clients with a certificate from our CA (the API server) get in.
"""

from __future__ import annotations

import contextlib
import http.server
import socketserver
import ssl
import threading
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from ranktable.sim.controllers.exec import serve_exec
from ranktable.sim.controllers.kubelet import PODS, Kubelet
from ranktable.sim.k8s import errors
from ranktable.sim.k8s.websocket import upgrade
from ranktable.sim.real.kube_store import KubeStore


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    kubelet: Kubelet
    store: KubeStore
    stopping: threading.Event


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _text(self, code: int, text: str) -> None:
        body = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        url = urlsplit(self.path)
        parts = [unquote(p) for p in url.path.strip("/").split("/")]
        try:
            if parts == ["healthz"]:
                self._text(200, "ok")
            elif len(parts) == 4 and parts[0] in ("containerLogs", "exec"):
                pod = self.server.store.find(PODS, parts[1], parts[2])
                if pod is None:
                    raise errors.not_found("pods", "", parts[2])
                if parts[0] == "containerLogs":
                    query = {k: v[-1] for k, v in parse_qs(url.query).items()}
                    self._logs(pod, dict(query, container=parts[3]))
                else:
                    query_lists = parse_qs(url.query)
                    query_lists["container"] = [parts[3]]
                    # the API server names the streams as the kubelet API does: input/output/error
                    query_lists.setdefault("stdin", query_lists.get("input", ["false"]))
                    self._exec(pod, query_lists)
            else:
                self._text(404, f"404 page not found: {url.path}")
        except errors.ApiError as err:
            self._text(err.code, err.message)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _logs(self, pod: dict[str, Any], query: dict[str, str]) -> None:
        chunks = self.server.kubelet.read_log(pod, query)  # ApiError (400) before any output when not started
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        try:
            for data in chunks:
                if self.server.stopping.is_set():
                    break
                if data:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()

    def _exec(self, pod: dict[str, Any], query: dict[str, list[str]]) -> None:
        ws, protocol = upgrade(self)
        serve_exec(self.server.kubelet, pod, query, ws, protocol)


class KubeletServer:
    """Serves every simulated node's kubelet API on one 127.0.0.1 port."""

    def __init__(self, kubelet: Kubelet, store: KubeStore, cert: Path, key: Path, client_ca: Path) -> None:
        self.httpd = _Server(("127.0.0.1", 0), _Handler)
        self.httpd.kubelet, self.httpd.store = kubelet, store
        self.httpd.stopping = threading.Event()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert), str(key))
        context.load_verify_locations(str(client_ca))
        context.verify_mode = ssl.CERT_REQUIRED
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = int(self.httpd.server_address[1])
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="kubelet-api", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.httpd.stopping.set()
        with contextlib.suppress(OSError):
            self.httpd.shutdown()
            self.httpd.server_close()
