"""The cluster transport reads the kubeconfig itself (no `kubernetes` package, #28): tokens, token files,
client certificates given as data, exec credential plugins (run again once expired), the CA, and the
errors a user can act on. Against a small TLS server that records what each request carried."""

from __future__ import annotations

import base64
import json
import ssl
import stat
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ranktable.cluster.kube import Kube, new_api_client
from ranktable.cluster.transport import ApiException
from ranktable.errors import InputError, NotFoundError
from ranktable.sim.tls import ensure_certificate


class Recorder(BaseHTTPRequestHandler):
    seen: list[dict[str, Any]]

    def do_GET(self) -> None:
        peer = self.connection.getpeercert() if isinstance(self.connection, ssl.SSLSocket) else None
        self.server.seen.append(  # type: ignore[attr-defined]
            {
                "path": self.path,
                "authorization": self.headers.get("Authorization"),
                "peer": peer,
                "resumed": getattr(self.connection, "session_reused", None),
            }
        )
        missing = self.path.startswith("/api/v1/namespaces/default/pods/nosuch")
        body = json.dumps(
            {"kind": "Status", "code": 404, "message": "not found"}
            if missing
            else {"kind": "PodList", "items": []}
        ).encode()
        self.send_response(404 if missing else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[ThreadingHTTPServer, Path, Path]]:
    """A TLS API stand-in; it asks for a client certificate signed by `client.crt` (self-signed) and
    accepts connections without one."""
    (tmp_path / "srv").mkdir()
    (tmp_path / "cli").mkdir()
    cert, key = ensure_certificate(tmp_path / "srv")
    client_cert, _ = ensure_certificate(tmp_path / "cli")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.verify_mode = ssl.CERT_OPTIONAL
    context.load_verify_locations(client_cert)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    httpd.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd, cert, tmp_path
    finally:
        httpd.shutdown()
        httpd.server_close()


def write_kubeconfig(folder: Path, url: str, cluster: str, user: str) -> str:
    path = folder / "kubeconfig"
    path.write_text(
        f"""apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {{server: "{url}", {cluster}}}
users:
- name: u
  user: {{{user}}}
contexts:
- name: x
  context: {{cluster: c, user: u, namespace: default}}
current-context: x
""",
        encoding="utf-8",
    )
    return str(path)


def url_of(httpd: ThreadingHTTPServer) -> str:
    return f"https://127.0.0.1:{httpd.server_address[1]}"


def b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def list_pods(kubeconfig: str) -> dict[str, Any]:
    kube = Kube(new_api_client(kubeconfig, None), (5.0, 5.0))
    return kube.call(kube.core.list_namespaced_pod, "default", what="pods")


def test_token_file_relative_to_the_kubeconfig_and_the_ca_as_data(server: Any) -> None:
    httpd, cert, folder = server
    (folder / "secret").mkdir()
    (folder / "secret" / "token").write_text("fr0m-file\n", encoding="utf-8")
    config = write_kubeconfig(
        folder, url_of(httpd), f"certificate-authority-data: {b64(cert)}", "tokenFile: secret/token"
    )
    assert list_pods(config) == {"kind": "PodList", "items": []}
    assert httpd.seen[-1]["authorization"] == "Bearer fr0m-file"
    assert httpd.seen[-1]["peer"] is None  # no client certificate was configured


def test_client_certificate_as_data_is_presented_and_not_left_on_disk(
    server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    httpd, cert, folder = server
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    client = folder / "cli"
    user = (
        f"client-certificate-data: {b64(client / 'server.crt')}, "
        f"client-key-data: {b64(client / 'server.key')}"
    )
    config = write_kubeconfig(folder, url_of(httpd), f"certificate-authority: {cert}", user)
    list_pods(config)
    peer = httpd.seen[-1]["peer"]
    assert peer and peer["subject"] == ((("commonName", "ranktable-sim"),),)
    assert httpd.seen[-1]["authorization"] is None
    assert list(scratch.iterdir()) == []  # the key pair's file went as soon as OpenSSL read it


def exec_plugin(folder: Path, token: str, expires: str) -> Path:
    script = folder / "plugin.sh"
    count = folder / "runs"
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": token, "expirationTimestamp": expires},
    }
    script.write_text(
        f"#!/bin/sh\necho run >> {count}\n"
        f'test "$PLUGIN_MODE" = on || exit 3\n'
        f"echo '{json.dumps(credential)}'\n",
        encoding="utf-8",
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return count


@pytest.mark.parametrize(("expires", "runs"), [("2000-01-01T00:00:00Z", 3), ("2999-01-01T00:00:00Z", 1)])
def test_exec_plugin_token_runs_again_only_once_expired(server: Any, expires: str, runs: int) -> None:
    httpd, cert, folder = server
    count = exec_plugin(folder, "ex3c", expires)
    user = (
        "exec: {apiVersion: client.authentication.k8s.io/v1, command: ./plugin.sh, "
        "env: [{name: PLUGIN_MODE, value: 'on'}]}"
    )
    config = write_kubeconfig(folder, url_of(httpd), f"certificate-authority: {cert}", user)
    kube = Kube(new_api_client(config, None), (5.0, 5.0))
    for _ in range(3):
        kube.call(kube.core.list_namespaced_pod, "default", what="pods")
    assert [s["authorization"] for s in httpd.seen] == ["Bearer ex3c"] * 3
    assert count.read_text(encoding="utf-8").count("run") == runs


def test_a_failing_exec_plugin_is_one_clear_error(server: Any) -> None:
    httpd, cert, folder = server
    exec_plugin(folder, "secret-token", "2999-01-01T00:00:00Z")
    user = "exec: {apiVersion: client.authentication.k8s.io/v1, command: ./plugin.sh}"  # no PLUGIN_MODE
    config = write_kubeconfig(folder, url_of(httpd), f"certificate-authority: {cert}", user)
    with pytest.raises(InputError, match=r"exec credential plugin .*plugin.sh exited 3") as caught:
        list_pods(config)
    assert caught.value.where == config and "secret-token" not in str(caught.value)
    assert httpd.seen == []


def test_a_404_is_the_api_status_and_the_products_not_found(server: Any) -> None:
    httpd, cert, folder = server
    config = write_kubeconfig(folder, url_of(httpd), f"certificate-authority: {cert}", "token: t0ken")
    kube = Kube(new_api_client(config, None), (5.0, 5.0))
    with pytest.raises(ApiException) as caught:
        kube.core.read_namespaced_pod("nosuch", "default")
    assert caught.value.status == 404 and json.loads(caught.value.body or "")["message"] == "not found"
    with pytest.raises(NotFoundError, match="pod nosuch not found"):
        kube.call(kube.core.read_namespaced_pod, "nosuch", "default", what="pod nosuch")


@pytest.mark.parametrize(
    ("cluster", "user", "context", "message"),
    [
        ("certificate-authority: missing.crt", "token: t", None, "cannot read certificate-authority"),
        ("insecure-skip-tls-verify: true", "token: t", "nosuch", "no context named 'nosuch'"),
        ("insecure-skip-tls-verify: true", "exec: {args: [x]}", None, "exec has no command"),
    ],
)
def test_unusable_kubeconfigs_name_the_file_and_the_problem(
    tmp_path: Path, cluster: str, user: str, context: str | None, message: str
) -> None:
    config = write_kubeconfig(tmp_path, "https://127.0.0.1:1", cluster, user)
    with pytest.raises(InputError, match=message) as caught:
        new_api_client(config, context)
    assert caught.value.where == config and caught.value.fix


def test_a_server_that_is_not_a_url_is_refused(tmp_path: Path) -> None:
    config = write_kubeconfig(tmp_path, "127.0.0.1:6443", "insecure-skip-tls-verify: true", "token: t")
    with pytest.raises(InputError, match="is not an http"):
        new_api_client(config, None)


def test_describe_reads_run_at_once_and_the_last_reads_error_wins() -> None:
    """`job describe`'s API reads overlap (a barrier only two concurrent reads can pass), and when several
    fail the job's own read (the last) names the error."""
    from ranktable.cluster.client import together

    barrier = threading.Barrier(2, timeout=5)
    assert together([lambda: barrier.wait() * 0 + 1, lambda: barrier.wait() * 0 + 2]) == [1, 2]

    def fails(message: str) -> Any:
        def read() -> Any:
            raise NotFoundError(message)

        return read

    with pytest.raises(NotFoundError, match="job x not found"):
        together([fails("nodes"), lambda: 3, fails("job x not found")])


def test_an_auth_provider_user_goes_through_the_official_loader(server: Any) -> None:
    """A legacy `auth-provider` (here oidc with an unexpired id-token) is read by the kubernetes package's
    loader; its token reaches the API server as kubectl sends it."""
    httpd, cert, folder = server

    def part(doc: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")

    token = f"{part({'alg': 'none'})}.{part({'exp': 32503680000, 'sub': 'u'})}.c2ln"
    user = (
        "auth-provider: {name: oidc, config: "
        f"{{client-id: c, idp-issuer-url: 'https://127.0.0.1:1', id-token: '{token}'}}}}"
    )
    config = write_kubeconfig(folder, url_of(httpd), f"certificate-authority: {cert}", user)
    assert list_pods(config)["kind"] == "PodList"
    assert httpd.seen[-1]["authorization"] == f"Bearer {token}"


LIGHT_PROBE = """
import sys
from ranktable.cluster.kube import Kube, new_api_client
from ranktable.errors import RanktableError
kube = Kube(new_api_client(sys.argv[1], None), (5.0, 5.0))
try:
    for _ in range(2):  # the second on the kept-alive connection
        print(kube.call(kube.core.list_namespaced_pod, "default", what="pods")["kind"])
except RanktableError as exc:
    print(type(exc).__name__, exc.message)
print("urllib3" in sys.modules)
"""


def test_the_light_path_sends_the_token_and_verifies_the_server(server: Any, tmp_path: Path) -> None:
    """In a process without urllib3 (a cold CLI command) whole-body calls go through http.client: the same
    headers, the CA checked, an unverifiable server refused as unreachable."""
    import subprocess
    import sys

    httpd, cert, folder = server
    good = write_kubeconfig(folder, url_of(httpd), f"certificate-authority: {cert}", "token: l1ght")
    probe = [sys.executable, "-c", LIGHT_PROBE]
    done = subprocess.run([*probe, good], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["PodList", "PodList", "False"], done.stderr
    assert [s["authorization"] for s in httpd.seen] == ["Bearer l1ght", "Bearer l1ght"]
    (tmp_path / "other").mkdir()
    other_ca, _ = ensure_certificate(tmp_path / "other")
    (tmp_path / "bad").mkdir()
    bad = write_kubeconfig(tmp_path / "bad", url_of(httpd), f"certificate-authority: {other_ca}", "token: t")
    done = subprocess.run([*probe, bad], capture_output=True, text=True, check=True)
    assert "UnreachableError cannot reach the Kubernetes API" in done.stdout, done.stderr
    assert len(httpd.seen) == 2  # nothing was sent to the server the CA did not sign


TOGETHER_PROBE = """
import sys
from ranktable.cluster.client import together
from ranktable.cluster.kube import Kube, new_api_client
kube = Kube(new_api_client(sys.argv[1], None), (5.0, 5.0))
read = lambda: kube.call(kube.core.list_namespaced_pod, "default", what="pods")["kind"]
print(*together([read] * 5), "urllib3" in sys.modules)
"""


def test_parallel_reads_make_one_full_tls_handshake_and_resume_its_session(server: Any) -> None:
    """`job describe`'s reads at once (`together`, cold, http.client): the first connection's TLS session
    is resumed by the others (one full handshake per command, not one per read; #28)."""
    import subprocess
    import sys

    httpd, cert, folder = server
    good = write_kubeconfig(folder, url_of(httpd), f"certificate-authority: {cert}", "token: t0")
    done = subprocess.run(
        [sys.executable, "-c", TOGETHER_PROBE, good], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["PodList"] * 5 + ["False"], done.stderr
    resumed = [s["resumed"] for s in httpd.seen]
    assert len(resumed) == 5 and resumed.count(False) == 1 and resumed[0] is False, resumed
