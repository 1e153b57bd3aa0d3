"""The Kubernetes API transport: the kubeconfig read here, every request a plain urllib3 request.

Why not the official client's `ApiClient` and config loader: importing `kubernetes.config` imports the
package's client, its REST layer and pydantic (~0.5 s of CPU idle, ~1.5 s under load), the most of a cold
CLI command where `kubectl get` answers in 0.2 s (#28). urllib3 is what that client sends through anyway, so
the responses, streams, timeouts and errors the cluster adapter handles are the same objects.

What a kubeconfig may say, as kubectl reads it: the cluster's `server`, `certificate-authority(-data)`,
`insecure-skip-tls-verify`, `tls-server-name`, `proxy-url` (http/https); the user's `token`, `tokenFile`,
`username`/`password`, `client-certificate(-data)`/`client-key(-data)` and `exec` credential plugins
(`client.authentication.k8s.io` ExecCredential: a token or a client certificate, run again once expired).
The legacy `auth-provider` plugins (oidc, gcp, azure) are left to the official loader (`_from_official`),
which this module imports only for such a kubeconfig. Paths are relative to the kubeconfig's folder.
Secrets are never logged nor put in an error message.
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import json
import os
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from ranktable.errors import InputError
from ranktable.limits import load_yaml_all

if TYPE_CHECKING:
    import urllib3

EXEC_TIMEOUT = 60.0


class ApiException(Exception):
    """A non-2xx answer of the API server: status, reason, the body (text) and the headers."""

    def __init__(
        self, status: int = 0, reason: str | None = None, body: str | None = None, headers: Any = None
    ) -> None:
        self.status = status
        self.reason = reason
        self.body = body
        self.headers = headers
        super().__init__(f"({status}) {reason or ''}".strip())

    @classmethod
    def from_response(cls, resp: Any) -> ApiException:
        data = resp.data  # read (and released) here
        body = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        return cls(resp.status, resp.reason, body, resp.headers)


@dataclass
class Credentials:
    """How requests authenticate: a header value (token or basic) and/or a client certificate pair."""

    authorization: str | None = None
    cert_pem: bytes | None = None
    key_pem: bytes | None = None
    expires: float | None = None  # time.time() after which an exec plugin is run again


@dataclass
class KubeConfig:
    """One context of a kubeconfig, resolved: where the API server is and how to trust and reach it."""

    host: str
    where: str  # the kubeconfig's path, for error messages
    ca_pem: bytes | None = None
    verify: bool = True
    server_name: str | None = None
    proxy: str | None = None
    credentials: Callable[[], Credentials] = field(default=lambda: Credentials())
    namespace: str | None = None


def _mapping(value: Any, where: str, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"unusable kubeconfig: {what} is not a mapping", where=where, fix="check the file")
    return value


def _named(items: Any, name: str, kind: str, where: str) -> dict[str, Any]:
    for item in items or []:
        if isinstance(item, dict) and item.get("name") == name:
            return _mapping(item.get(kind), where, f"{kind} {name!r}")
    raise InputError(
        f"unusable kubeconfig: no {kind} named {name!r}",
        where=where,
        fix="check the file and the --context name",
    )


def _read_bytes(section: dict[str, Any], key: str, base: Path, where: str) -> bytes | None:
    """A `<key>-data` (base64) or a `<key>` file, relative to the kubeconfig's folder."""
    data = section.get(f"{key}-data")
    if data:
        try:
            return base64.b64decode(str(data), validate=False)
        except ValueError:
            raise InputError(
                f"unusable kubeconfig: {key}-data is not base64", where=where, fix="check the file"
            ) from None
    path = section.get(key)
    if not path:
        return None
    full = base / os.path.expanduser(str(path))
    try:
        return full.read_bytes()
    except OSError as exc:
        raise InputError(
            f"unusable kubeconfig: cannot read {key} {full} ({exc.strerror})",
            where=where,
            fix="check the file's path",
        ) from None


def load_kubeconfig(path: str, context: str | None) -> KubeConfig:
    """The named (or current) context of the kubeconfig at `path`."""
    where = path
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(
            f"cannot read the kubeconfig ({getattr(exc, 'strerror', None) or exc})",
            where=where,
            fix="check the path and the file",
        ) from None
    docs = load_yaml_all(text, where)
    doc = docs[0] if docs else None
    doc = _mapping(doc, where, "the file")
    name = context or doc.get("current-context")
    if not name:
        raise InputError(
            "unusable kubeconfig: no current-context",
            where=where,
            fix="pass --context or set current-context",
        )
    ctx = _named(doc.get("contexts"), str(name), "context", where)
    cluster = _named(doc.get("clusters"), str(ctx.get("cluster")), "cluster", where)
    user = _named(doc.get("users"), str(ctx.get("user")), "user", where) if ctx.get("user") else {}
    if user.get("auth-provider"):
        return _from_official(path, str(name), ctx)
    host = str(cluster.get("server") or "").rstrip("/")
    if not host.startswith(("https://", "http://")):
        raise InputError(
            f"unusable kubeconfig: cluster server {host!r} is not an http(s) URL",
            where=where,
            fix="set the cluster's server to https://HOST:PORT",
        )
    base = Path(path).resolve().parent
    proxy = cluster.get("proxy-url")
    if proxy and not str(proxy).startswith(("http://", "https://")):
        raise InputError(
            f"unusable kubeconfig: proxy-url {proxy!r} is not http(s)",
            where=where,
            fix="use an http(s) proxy",
        )
    return KubeConfig(
        host=host,
        where=where,
        ca_pem=_read_bytes(cluster, "certificate-authority", base, where),
        verify=not cluster.get("insecure-skip-tls-verify"),
        server_name=cluster.get("tls-server-name") or None,
        proxy=str(proxy) if proxy else None,
        credentials=_credentials(user, base, where),
        namespace=ctx.get("namespace"),
    )


def _credentials(user: dict[str, Any], base: Path, where: str) -> Callable[[], Credentials]:
    cert = _read_bytes(user, "client-certificate", base, where)
    key = _read_bytes(user, "client-key", base, where)
    token = user.get("token")
    if not token and user.get("tokenFile"):
        token_path = base / os.path.expanduser(str(user["tokenFile"]))
        try:
            token = token_path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise InputError(
                f"unusable kubeconfig: cannot read tokenFile {token_path} ({exc.strerror})",
                where=where,
                fix="check the file's path",
            ) from None
    authorization = None
    if token:
        authorization = f"Bearer {token}"
    elif user.get("username") is not None and user.get("password") is not None:
        pair = f"{user['username']}:{user['password']}".encode()
        authorization = "Basic " + base64.b64encode(pair).decode()
    fixed = Credentials(authorization, cert, key)
    plugin = user.get("exec")
    if not plugin:
        return lambda: fixed
    return ExecPlugin(_mapping(plugin, where, "user exec"), base, where, fixed)


class ExecPlugin:
    """A `client.authentication.k8s.io` credential plugin, run on first use and again once expired."""

    def __init__(self, spec: dict[str, Any], base: Path, where: str, fixed: Credentials) -> None:
        if not spec.get("command"):
            raise InputError(
                "unusable kubeconfig: exec has no command", where=where, fix="check the user's exec"
            )
        self.spec, self.base, self.where, self.fixed = spec, base, where, fixed
        self.current: Credentials | None = None
        self.lock = threading.Lock()

    def __call__(self) -> Credentials:
        with self.lock:
            now = time.time()
            if self.current is None or (self.current.expires is not None and now >= self.current.expires):
                self.current = self._run()
            return self.current

    def _run(self) -> Credentials:
        spec = self.spec
        command = str(spec["command"])
        if os.sep in command and not os.path.isabs(command):
            command = str(self.base / command)  # a relative path is the kubeconfig's folder's
        env = dict(os.environ)
        for item in spec.get("env") or []:
            if isinstance(item, dict) and item.get("name"):
                env[str(item["name"])] = str(item.get("value", ""))
        api_version = str(spec.get("apiVersion") or "client.authentication.k8s.io/v1")
        env["KUBERNETES_EXEC_INFO"] = json.dumps(
            {"apiVersion": api_version, "kind": "ExecCredential", "spec": {"interactive": False}}
        )
        fix = "check the user's exec command (run it by hand: it must print an ExecCredential)"
        try:
            done = subprocess.run(
                [command, *[str(a) for a in spec.get("args") or []]],
                env=env,
                capture_output=True,
                timeout=EXEC_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise InputError(
                f"exec credential plugin {command} failed: {exc}", where=self.where, fix=fix
            ) from None
        if done.returncode:
            tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            raise InputError(
                f"exec credential plugin {command} exited {done.returncode}: {tail[0][:200]}",
                where=self.where,
                fix=fix,
            )
        try:
            status = json.loads(done.stdout).get("status") or {}
        except (ValueError, AttributeError):
            raise InputError(
                f"exec credential plugin {command} printed no ExecCredential JSON", where=self.where, fix=fix
            ) from None
        token = status.get("token")
        cert = status.get("clientCertificateData")
        key = status.get("clientKeyData")
        if not token and not (cert and key):
            raise InputError(
                f"exec credential plugin {command} gave neither a token nor a client certificate",
                where=self.where,
                fix=fix,
            )
        expires = None
        if status.get("expirationTimestamp"):
            stamp = str(status["expirationTimestamp"]).replace("Z", "+00:00")
            try:
                expires = dt.datetime.fromisoformat(stamp).timestamp()
            except ValueError:
                expires = None
        return Credentials(
            f"Bearer {token}" if token else self.fixed.authorization,
            cert.encode() if cert else self.fixed.cert_pem,
            key.encode() if key else self.fixed.key_pem,
            expires,
        )


def _from_official(path: str, context: str, ctx: dict[str, Any]) -> KubeConfig:
    """An `auth-provider` user: the official loader resolves it (and refreshes its token)."""
    from kubernetes import client, config

    settings = client.Configuration()
    try:
        config.load_kube_config(
            config_file=path, context=context, client_configuration=settings, persist_config=False
        )
    except config.ConfigException as exc:
        raise InputError(
            f"unusable kubeconfig: {exc}", where=path, fix="check the file and the --context name"
        ) from None

    def credentials() -> Credentials:
        if settings.refresh_api_key_hook is not None:
            settings.refresh_api_key_hook(settings)
        header = settings.get_api_key_with_prefix("BearerToken") or settings.get_api_key_with_prefix(
            "authorization"
        )
        cert = Path(settings.cert_file).read_bytes() if settings.cert_file else None
        key = Path(settings.key_file).read_bytes() if settings.key_file else None
        return Credentials(header, cert, key)

    ca = Path(settings.ssl_ca_cert).read_bytes() if settings.ssl_ca_cert else None
    return KubeConfig(
        host=str(settings.host).rstrip("/"),
        where=path,
        ca_pem=ca,
        verify=bool(settings.verify_ssl),
        server_name=getattr(settings, "tls_server_name", None),
        proxy=settings.proxy,
        credentials=credentials,
        namespace=ctx.get("namespace"),
    )


def _load_cert_chain(context: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """OpenSSL reads a key pair only from files: a private file, removed as soon as it is read."""
    fd, name = tempfile.mkstemp(prefix="ranktable-client-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as fh:  # mkstemp: mode 0600, this user's
            fh.write(cert.rstrip(b"\n") + b"\n" + key)
        context.load_cert_chain(name)
    finally:
        os.unlink(name)


@functools.cache
def _resuming_https_class() -> Any:
    import http.client

    class ResumingHTTPSConnection(http.client.HTTPSConnection):
        """http.client's HTTPS connection, resuming `tls_session` when one is set (no full handshake)."""

        tls_session: ssl.SSLSession | None = None
        tls_sock: ssl.SSLSocket | None = None

        def connect(self) -> None:
            http.client.HTTPConnection.connect(self)
            self.sock = self.tls_sock = self._context.wrap_socket(  # type: ignore[attr-defined]
                self.sock, server_hostname=self.host, session=self.tls_session
            )

    return ResumingHTTPSConnection


class LightResponse:
    """A whole answer read through http.client: what `Kube.call` and `ApiException` read of a response."""

    def __init__(self, status: int, reason: str, headers: Any, data: bytes) -> None:
        self.status, self.reason, self.headers, self.data = status, reason, headers, data


class Transport:
    """Requests to one API server: one pool, one TLS context for every connection (not one each: a
    1,024-pod job's log follow opens 1,024 connections), credentials refreshed as the plugin says.

    A whole-body request (``preload``) in a process that has not loaded urllib3 (a cold CLI command:
    `job list`, `describe`) goes through the standard library's http.client on a kept-alive connection
    per thread, with the same TLS context and headers: importing urllib3 costs ~0.04 s of CPU, a quarter
    of such a command (#28). Streams (logs, watches) and every request once urllib3 is loaded (the Jupyter
    server and the warm CLI server load it first) use urllib3's pool."""

    def __init__(self, config: KubeConfig, maxsize: int = 128) -> None:
        self.config = config
        self.host = config.host
        self._lock = threading.Lock()
        self._pair: tuple[bytes | None, bytes | None] = (None, None)
        self._pool: urllib3.PoolManager | None = None
        self._maxsize = maxsize
        self._context: tuple[tuple[bytes | None, bytes | None], ssl.SSLContext] | None = None
        self._local = threading.local()
        # the light path's TLS session, resumed by every later connection (one full handshake per
        # process: `job describe`'s parallel reads otherwise made one each, #28), for its context
        self._session: tuple[ssl.SSLContext, ssl.SSLSession] | None = None
        self._first_handshake: threading.Event | None = None

    def _ssl_context(self, creds: Credentials) -> ssl.SSLContext:
        pair = (creds.cert_pem, creds.key_pem)
        with self._lock:
            if self._context is None or self._context[0] != pair:
                context = ssl.create_default_context(
                    cadata=self.config.ca_pem.decode() if self.config.ca_pem else None
                )
                if not self.config.verify:
                    context.check_hostname = False
                    context.verify_mode = ssl.CERT_NONE
                if creds.cert_pem and creds.key_pem:
                    _load_cert_chain(context, creds.cert_pem, creds.key_pem)
                self._context = (pair, context)
            return self._context[1]

    def _manager(self, creds: Credentials) -> urllib3.PoolManager:
        pair = (creds.cert_pem, creds.key_pem)
        with self._lock:
            pool = self._pool if pair == self._pair else None
        if pool is None:  # first use, or an exec plugin's new certificate
            pool = self._new_pool(creds)
            with self._lock:
                self._pool, self._pair = pool, pair
        return pool

    def _new_pool(self, creds: Credentials) -> urllib3.PoolManager:
        import urllib3

        kw: dict[str, Any] = {"maxsize": self._maxsize, "block": False}
        if self.host.startswith("https://"):
            kw["ssl_context"] = self._ssl_context(creds)
            if not self.config.verify:
                kw["cert_reqs"] = "CERT_NONE"
                kw["assert_hostname"] = False
            elif self.config.server_name:
                kw["server_hostname"] = self.config.server_name
        if self.config.proxy:
            return urllib3.ProxyManager(self.config.proxy, **kw)
        return urllib3.PoolManager(**kw)

    def _light(self) -> bool:
        return "urllib3" not in sys.modules and not self.config.proxy and not self.config.server_name

    def _light_request(
        self,
        method: str,
        target: str,
        data: bytes | None,
        sent: dict[str, str],
        timeout: Any,
        creds: Credentials,
    ) -> LightResponse:
        import http.client
        from urllib.parse import urlsplit

        connect, read = timeout if isinstance(timeout, tuple) else (timeout, timeout)
        conn = getattr(self._local, "conn", None)
        leader: threading.Event | None = None
        for attempt in (0, 1):  # a kept-alive connection the server closed: once more on a new one
            if conn is None:
                parts = urlsplit(self.host)
                if parts.scheme == "https":
                    context = self._ssl_context(creds)
                    session, leader = self._tls_session(context, connect)
                    conn = _resuming_https_class()(
                        parts.hostname or "", parts.port or 443, timeout=connect, context=context
                    )
                    conn.tls_session = session
                else:
                    conn = http.client.HTTPConnection(parts.hostname or "", parts.port or 80, timeout=connect)
                try:
                    conn.connect()
                except BaseException:
                    self._handshake_done(leader, None)
                    raise
                if conn.sock is not None:
                    conn.sock.settimeout(read)
                fresh = True
            else:
                fresh = False
            try:
                conn.request(method, target, body=data, headers=sent)
                resp = conn.getresponse()
                # the session ticket came before the answer's head; taken now, as a closing answer's
                # socket is gone once its body is read
                self._handshake_done(leader, getattr(conn, "tls_sock", None))
                body = resp.read()
            except (ConnectionError, http.client.RemoteDisconnected, http.client.BadStatusLine):
                self._handshake_done(leader, None)
                conn.close()
                conn = None
                self._local.conn = None
                if fresh or attempt or method not in ("GET", "HEAD"):
                    raise
                continue
            except BaseException:
                self._handshake_done(leader, None)
                conn.close()
                self._local.conn = None
                raise
            self._local.conn = None if resp.will_close else conn
            return LightResponse(resp.status, resp.reason, resp.headers, body)
        raise AssertionError("unreachable")

    def _tls_session(
        self, context: ssl.SSLContext, wait: Any
    ) -> tuple[ssl.SSLSession | None, threading.Event | None]:
        """The TLS session to resume for a new connection, and (for the first connection only) the event
        this caller sets once its handshake's session is known. A caller arriving while the first
        handshake is under way waits for it (at most the connect timeout), then resumes its session."""
        with self._lock:
            if self._session is not None and self._session[0] is context:
                return self._session[1], None
            pending = self._first_handshake
            if pending is None or pending.is_set():
                self._first_handshake = threading.Event()
                return None, self._first_handshake
        pending.wait(wait if isinstance(wait, (int, float)) else 10.0)
        with self._lock:
            found = self._session
        return (found[1] if found is not None and found[0] is context else None), None

    def _handshake_done(self, leader: threading.Event | None, sock: Any) -> None:
        """Keep `sock`'s TLS session for later connections; wake those waiting for the first handshake."""
        session = getattr(sock, "session", None)
        if session is not None:
            with self._lock:
                self._session = (sock.context, session)
        if leader is not None:
            leader.set()

    def request(
        self,
        method: str,
        path: str,
        query: list[tuple[str, Any]] | None = None,
        headers: dict[str, str] | None = None,
        body: Any = None,
        timeout: Any = None,
        preload: bool = False,
    ) -> Any:
        """One request; the urllib3 response (streaming unless `preload`), or a `LightResponse` (see the
        class). A non-2xx answer raises `ApiException`; connection and TLS failures raise urllib3's errors
        (or http.client's and OSError's on the light path: `kube.network_errors()` names them all)."""
        creds = self.config.credentials()
        target = path + ("?" + urlencode(query) if query else "")
        sent = dict(headers or {})
        if creds.authorization:
            sent["Authorization"] = creds.authorization
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            sent.setdefault("Content-Type", "application/json")
        if preload and self._light():
            resp: Any = self._light_request(method, target, data, sent, timeout, creds)
        else:
            import urllib3

            pool = self._manager(creds)
            if isinstance(timeout, tuple):
                timeout = urllib3.Timeout(connect=timeout[0], read=timeout[1])
            resp = pool.request(
                method, self.host + target, body=data, headers=sent, timeout=timeout, preload_content=preload
            )
        if not 200 <= resp.status <= 299:
            raise ApiException.from_response(resp)
        return resp
