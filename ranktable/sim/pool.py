"""Start and stop a simulated Lite pool: API server, controllers, kubelet, kubeconfig.

State lives in one directory: `kubeconfig` and `server.json` (mode 600, they hold the token),
`objects.json` (saved twice a second and at stop), `pods/` (sandboxes and log files). A pool stopped
with `kill_pods=False` and started again with `resume=True` on the same directory keeps its objects,
its token and port, and re-adopts the pod processes, so log streams can resume where they were.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ranktable.sim.admission import volcano_admitter
from ranktable.sim.controllers.cluster import bootstrap
from ranktable.sim.controllers.exec import serve_exec
from ranktable.sim.controllers.kubelet import BACKOFF_SECONDS, Kubelet
from ranktable.sim.controllers.logs import DEFAULT_LIMIT_BYTES, ensure_dir
from ranktable.sim.controllers.manager import ControllerManager
from ranktable.sim.controllers.sandbox import Confinement
from ranktable.sim.fabric import SimNode, default_fabric, fabric_from_topology
from ranktable.sim.k8s.rbac import TEAM_NAMESPACE, SimUser
from ranktable.sim.k8s.server import ApiServer, Hooks, Limits
from ranktable.sim.k8s.store import Store
from ranktable.sim.k8s.websocket import WebSocket
from ranktable.sim.kubeconfig import write_kubeconfig, write_user_kubeconfigs
from ranktable.sim.paths import CONTEXT, default_state_dir
from ranktable.sim.tls import ensure_certificate

SAVE_SECONDS = 0.5


@dataclass
class PoolConfig:
    state_dir: Path = field(default_factory=default_state_dir)
    nodes: int = 8
    leaves: int = 2
    topology: Path | None = None
    port: int = 0
    ranktable_delay: float = 0.5
    log_limit: int = DEFAULT_LIMIT_BYTES
    history: int = 2000
    resume: bool = False
    backoff_seconds: float = BACKOFF_SECONDS  # CrashLoopBackOff's first delay (the kubelet's is 10 s)
    limits: Limits = field(default_factory=Limits)  # body size, request time, connections
    tenants: int = 0  # nodes held by other tenants' long-running jobs (a shared pool)
    # host folders standing for storage every node mounts (SFS Turbo); pods reach them by hostPath
    shared_storage: tuple[Path, ...] = ()
    users: tuple[SimUser, ...] = ()  # team members with their own token, kubeconfig and namespace

    def user_namespaces(self) -> tuple[str, ...]:
        editors = tuple(u.namespace for u in self.users if u.role == "editor")
        return (*editors, TEAM_NAMESPACE) if editors else ()

    def fabric(self) -> list[SimNode]:
        if self.topology is not None:
            return fabric_from_topology(self.topology)
        return default_fabric(self.nodes, self.leaves)


def _write_private(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    tmp.replace(path)


class PoolFiles:
    """Where a pool (simulated or the real control plane) keeps its state and the kubeconfig users load."""

    def __init__(self, config: PoolConfig) -> None:
        self.config = config
        self.state_dir = ensure_dir(Path(config.state_dir))
        self.kubeconfig = self.state_dir / "kubeconfig"
        self.context = CONTEXT
        self.token = ""
        self.port = 0

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def user_kubeconfig(self, name: str) -> Path:
        """A team member's kubeconfig (`sim start --user NAME`): their token, their namespace."""
        return self.state_dir / f"kubeconfig-{name}"

    @property
    def server_file(self) -> Path:
        return self.state_dir / "server.json"

    def write_server_file(self, **extra: Any) -> None:
        """server.json: how `sim status` and the CLI find the running pool (private: it holds the token)."""
        found = {"port": self.port, "token": self.token, "pid": os.getpid(), "url": self.url}
        _write_private(self.server_file, json.dumps({**found, "context": self.context, **extra}))


class Pool(PoolFiles):
    """A running simulated pool. `start()` returns once the API answers."""

    def __init__(self, config: PoolConfig) -> None:
        super().__init__(config)
        self.store = Store(history=config.history)
        self._stop = threading.Event()
        self._stop_requested = threading.Event()
        self._threads: list[threading.Thread] = []
        self.kubelet: Kubelet | None = None
        self.controllers: ControllerManager | None = None
        self.api: ApiServer | None = None

    @property
    def objects_file(self) -> Path:
        return self.state_dir / "objects.json"

    @property
    def confinement(self) -> Confinement | None:
        """How the kubelet confines pod processes (None before it starts)."""
        return self.kubelet.sandboxes.confinement if self.kubelet is not None else None

    def _saved_server(self) -> dict[str, Any]:
        try:
            return dict(json.loads(self.server_file.read_text()))
        except (OSError, ValueError):
            return {}

    def start(self) -> Pool:
        cfg = self.config
        saved = self._saved_server() if cfg.resume else {}
        if cfg.resume and self.store.load(self.objects_file):
            pass
        else:
            self.objects_file.unlink(missing_ok=True)
            for stale in ("server.crt", "server.key"):
                (self.state_dir / stale).unlink(missing_ok=True)
            shutil.rmtree(self.state_dir / "pods", ignore_errors=True)
        nodes = cfg.fabric()
        bootstrap(self.store, nodes, cfg.tenants, cfg.user_namespaces())
        self.store.compact()
        self.token = str(saved.get("token") or secrets.token_urlsafe(32))
        self.kubelet = Kubelet(
            self.store, self.state_dir, cfg.log_limit, cfg.backoff_seconds, shared=cfg.shared_storage
        )
        hooks = Hooks(
            read_log=self.kubelet.read_log,
            execute=self._execute,
            delete=self.kubelet.delete_hook,
            admit=[volcano_admitter(self.store)],
        )
        tokens = {str(k): str(v) for k, v in (saved.get("user_tokens") or {}).items()}
        for user in cfg.users:
            tokens.setdefault(user.name, secrets.token_urlsafe(32))
        users = {tokens[u.name]: u for u in cfg.users}
        self.api = ApiServer(self.store, self.token, hooks, cfg.limits, nodes=len(nodes), users=users)
        cert, key = ensure_certificate(self.state_dir)
        self.port = self.api.bind(cfg.port or int(saved.get("port") or 0), cert, key)
        write_kubeconfig(self.kubeconfig, self.url, self.token, cert.read_bytes(), self.context)
        write_user_kubeconfigs(
            [(u.name, u.namespace) for u in cfg.users],
            self.user_kubeconfig,
            self.url,
            tokens,
            cert.read_bytes(),
            self.context,
        )
        self.write_server_file(
            user_tokens={u.name: tokens[u.name] for u in cfg.users},
            users=[{**u.to_json(), "kubeconfig": str(self.user_kubeconfig(u.name))} for u in cfg.users],
            confined=self.kubelet.sandboxes.confinement.active,
            pods=self.kubelet.sandboxes.confinement.describe(),  # `sim start` / `sim status`
        )
        self.controllers = ControllerManager(
            self.store, self.kubelet, self.state_dir / "controller-errors.log", cfg.ranktable_delay
        )
        self.kubelet.start()
        self.controllers.start()
        for target, name in ((self.api.serve_forever, "sim-api"), (self._save_loop, "sim-save")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def _execute(
        self, pod: dict[str, Any], query: dict[str, list[str]], ws: WebSocket, protocol: str
    ) -> None:
        assert self.kubelet is not None
        serve_exec(self.kubelet, pod, query, ws, protocol)

    def _save_loop(self) -> None:
        while not self._stop.wait(SAVE_SECONDS):
            if self.store.dirty:
                self.store.save(self.objects_file)

    def stop(self, kill_pods: bool = True) -> None:
        """Stop serving; with `kill_pods` also end every pod process (else they keep running for a resume)."""
        self._stop.set()
        if self.api is not None:
            self.api.shutdown()
        if self.controllers is not None:
            self.controllers.stop()
        if self.kubelet is not None:
            self.kubelet.stop(kill=kill_pods)
        for thread in self._threads:
            thread.join(timeout=5)
        self.store.save(self.objects_file)

    def request_stop(self) -> None:
        """Ask `wait()` to return (safe from a signal handler)."""
        self._stop_requested.set()

    def wait(self) -> None:
        """Block until `request_stop()` (used by `ranktable sim serve`)."""
        while not self._stop_requested.wait(0.5):
            pass
