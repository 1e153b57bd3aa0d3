"""One TLS context per API client: every connection (1,024 of them while a 1,024-pod job's logs are
followed) is wrapped with the same context, which still verifies the server against the kubeconfig's CA."""

from __future__ import annotations

import socket
import ssl
import threading
from pathlib import Path
from typing import Any

import pytest
from urllib3.exceptions import MaxRetryError

from ranktable.cluster.kube import Kube, new_api_client
from tests.integration.test_cluster_bodyloop import END, HEAD, Server, chunk
from tests.integration.test_cluster_transport import write_kubeconfig


def kubeconfig(tmp_path: Path, url: str, ca: str) -> str:
    return write_kubeconfig(tmp_path, url, f'certificate-authority: "{ca}"', "token: t0ken")


def test_every_connection_shares_one_verifying_context(tmp_path: Path) -> None:
    hold = threading.Event()

    def script(conn: socket.socket, path: str, query: dict[str, list[str]]) -> None:
        conn.sendall(HEAD + chunk(b"x\n"))
        hold.wait(10)  # each response stays open: the next request needs a new connection
        conn.sendall(END)

    server = Server(script, tmp_path)
    responses: list[Any] = []
    try:
        kube = Kube(new_api_client(kubeconfig(tmp_path, server.url, server.ca), None), (5.0, 5.0))
        for i in range(5):
            responses.append(kube.get_raw(f"/api/v1/namespaces/default/pods/p{i}/log", [], (5.0, 5.0)))
        socks = [r.connection.sock for r in responses]
        assert all(isinstance(s, ssl.SSLSocket) for s in socks)
        assert len({id(s) for s in socks}) == 5  # five connections...
        assert len({id(s.context) for s in socks}) == 1  # ...one context
        assert socks[0].context.verify_mode == ssl.CERT_REQUIRED
        assert socks[0].getpeercert()  # the server's certificate was checked against the CA
    finally:
        hold.set()
        for resp in responses:
            resp.release_conn()
        server.close()


def test_a_server_the_ca_did_not_sign_is_refused(tmp_path: Path) -> None:
    (tmp_path / "server").mkdir()
    (tmp_path / "other").mkdir()
    server = Server(lambda conn, path, query: conn.sendall(HEAD + END), tmp_path / "server")
    other = Server(lambda conn, path, query: None, tmp_path / "other")  # another certificate as the CA
    try:
        kube = Kube(new_api_client(kubeconfig(tmp_path, server.url, other.ca), None), (5.0, 5.0))
        with pytest.raises(MaxRetryError, match="CERTIFICATE_VERIFY_FAILED"):
            kube.get_raw("/api/v1/namespaces/default/pods/p/log", [], (5.0, 5.0))
    finally:
        server.close()
        other.close()
