"""A SIMULATED Notebook instance: SSH server on 127.0.0.1 rooted in a sandbox folder (demos and tests only).

It stands in for a ModelArts-style Notebook instance so the SSH features work with no cloud: paramiko in
server mode, public-key auth only (the key pair it generates, like the platform's ``.pem``), ``exec`` through
a local shell in the sandbox, SFTP confined to the sandbox, ``direct-tcpip`` only to loopback targets, and at
most 10 simultaneous connections (the platform's limit; the 11th is closed straight away). It is not a
security boundary: commands run as the local user.

Like a ModelArts instance, it has its own disk (``<root>/work``) and a folder on shared storage
(``<root>/shared``, standing for SFS Turbo): the simulated pool mounts that folder into job pods at the
same absolute path (``ranktable sim start --shared-storage``), so code synced there is what a job runs.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from pathlib import Path

import paramiko
from paramiko.common import (
    AUTH_FAILED,
    AUTH_SUCCESSFUL,
    OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED,
    OPEN_FAILED_CONNECT_FAILED,
    OPEN_SUCCEEDED,
)

from ranktable.pump import pump
from ranktable.sim.notebook_exec import ExecSession
from ranktable.sim.notebook_keys import SimKeys, authorized_blobs
from ranktable.sim.notebook_sftp import RootedSFTPServer, SimSFTPServer

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 10
LOOPBACK_TARGETS = frozenset({"127.0.0.1", "localhost", "::1"})
DEFAULT_USER = "ma-user"
SHARED_FOLDER = "shared"


class _InstanceInterface(paramiko.ServerInterface):
    """Per-connection policy: key auth for one user, exec/sftp sessions, loopback-only direct-tcpip."""

    def __init__(self, instance: SimulatedNotebook) -> None:
        self.instance = instance
        self.forward_sockets: dict[int, socket.socket] = {}

    def get_allowed_auths(self, username: str) -> str:
        return "publickey"

    def check_auth_none(self, username: str) -> int:
        return AUTH_FAILED

    def check_auth_password(self, username: str, password: str) -> int:
        return AUTH_FAILED

    def check_auth_publickey(self, username: str, key: paramiko.PKey) -> int:
        if username == self.instance.user and key.get_base64() in authorized_blobs(
            self.instance.keys.authorized_keys_path
        ):
            return AUTH_SUCCESSFUL
        return AUTH_FAILED

    def check_channel_request(self, kind: str, chanid: int) -> int:
        if kind == "session":
            return OPEN_SUCCEEDED
        return OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_exec_request(self, channel: paramiko.Channel, command: bytes) -> bool:
        ExecSession(
            channel, command.decode("utf-8", "replace"), self.instance.root, self.instance.user
        ).start()
        return True

    def check_channel_direct_tcpip_request(
        self, chanid: int, origin: tuple[str, int], destination: tuple[str, int]
    ) -> int:
        host, port = destination
        if host not in LOOPBACK_TARGETS:
            return OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED
        try:
            sock = socket.create_connection((host, port), timeout=5)
        except OSError:
            return OPEN_FAILED_CONNECT_FAILED
        sock.settimeout(None)
        self.forward_sockets[chanid] = sock
        return OPEN_SUCCEEDED


class SimulatedNotebook:
    """The simulated instance. ``start()`` serves in background threads; ``serve_forever()`` blocks."""

    def __init__(
        self,
        root: Path,
        state_dir: Path,
        *,
        port: int = 0,
        user: str = DEFAULT_USER,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.root = Path(root).resolve()
        self.shared = self.root / SHARED_FOLDER
        self.keys = SimKeys(Path(state_dir))
        self.user = user
        self.max_connections = max_connections
        self._requested_port = port
        self._listener: socket.socket | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._transports: set[paramiko.Transport] = set()
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------------------
    @property
    def host(self) -> str:
        return "127.0.0.1"

    @property
    def port(self) -> int:
        if self._listener is None:
            raise RuntimeError("the simulated Notebook instance is not started")
        return int(self._listener.getsockname()[1])

    @property
    def active_connections(self) -> int:
        with self._lock:
            return len(self._transports)

    def bind(self) -> None:
        """Create keys and the sandbox, then listen (so the port is known before serving)."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.shared.mkdir(exist_ok=True)
        self.shared.chmod(0o755)  # the pods' user reads what is synced there
        self.keys.ensure()
        self._host_key = self.keys.host_key()
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind((self.host, self._requested_port))
        except OSError:
            listener.close()
            raise
        listener.listen(32)
        listener.settimeout(0.5)
        self._listener = listener

    def start(self) -> SimulatedNotebook:
        """Bind and serve in a daemon thread (tests, ``make demo``); returns self."""
        if self._listener is None:
            self.bind()
        self._thread = threading.Thread(target=self.serve_forever, name="sim-notebook", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        if self._listener is None:
            self.bind()
        assert self._listener is not None
        while not self._stop.is_set():
            try:
                sock, _peer = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._stop.is_set():
                    return
                raise
            with self._lock:
                full = len(self._transports) >= self.max_connections
            if full:
                # The platform drops it before the SSH banner ("Connection closed by remote host").
                with contextlib.suppress(OSError):
                    sock.close()
                continue
            sock.settimeout(None)
            threading.Thread(target=self._serve_connection, args=(sock,), daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
        if self._listener is not None:
            self._listener.close()
        with self._lock:
            transports = list(self._transports)
        for transport in transports:
            transport.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5)

    def __enter__(self) -> SimulatedNotebook:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- one connection -----------------------------------------------------------------------------
    def _serve_connection(self, sock: socket.socket) -> None:
        transport = paramiko.Transport(sock)
        with self._lock:
            self._transports.add(transport)
        try:
            transport.add_server_key(self._host_key)
            transport.set_subsystem_handler("sftp", SimSFTPServer, RootedSFTPServer, root=str(self.root))
            interface = _InstanceInterface(self)
            try:
                transport.start_server(server=interface)
            except (paramiko.SSHException, EOFError, OSError) as exc:
                log.debug("sim-notebook: handshake failed: %s", exc)
                return
            while transport.is_active() and not self._stop.is_set():
                chan = transport.accept(timeout=0.5)
                if chan is None:
                    continue
                forward = interface.forward_sockets.pop(chan.get_id(), None)
                if forward is not None:
                    threading.Thread(target=pump, args=(forward, chan), daemon=True).start()
                # session channels are driven by their exec/subsystem requests
        finally:
            transport.close()
            with self._lock:
                self._transports.discard(transport)
