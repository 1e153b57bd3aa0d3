"""A real Kubernetes + Volcano control plane on 127.0.0.1 with our controllers (`--control-plane real`).

Order (each step gated on readiness): etcd -> kube-apiserver -> kube-controller-manager (garbage collector,
namespaces) -> Volcano CRDs + webhook configurations -> vc-webhook-manager -> vc-controller-manager and
vc-scheduler -> our virtual kubelet (nodes, leases, pods, kubelet API) and the configmap1980 controller.
It offers the Python pool's interface (`start`, `wait`, `request_stop`, `stop`) and writes the same
`kubeconfig` and `server.json`, so `ranktable sim start|stop`, the CLI, the panel and kubectl do not
care which control plane runs. Logs of every process are in `<state>/logs/`.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from kubernetes import client
from kubernetes import config as kube_config

from ranktable.errors import RanktableError
from ranktable.sim.controllers.cluster import (
    SCHEDULER_CONF,
    hypernode_objects,
    scheduler_configmap,
    tor_node_configmap,
)
from ranktable.sim.controllers.logs import ensure_dir
from ranktable.sim.controllers.sandbox import Confinement
from ranktable.sim.k8s import errors
from ranktable.sim.k8s.resources import BY_KEY
from ranktable.sim.kubeconfig import write_kubeconfig, write_user_kubeconfigs
from ranktable.sim.pool import PoolConfig, PoolFiles, _write_private
from ranktable.sim.real import components
from ranktable.sim.real.agents import RankTableController, VirtualKubelet
from ranktable.sim.real.kube_store import KubeStore
from ranktable.sim.real.kubelet_server import KubeletServer
from ranktable.sim.real.team import team_objects, token_lines
from ranktable.sim.tls import ensure_certificate

STEP_TIMEOUT = 180.0
PR_SET_PDEATHSIG = 1
STOP_SECONDS = 10.0


def _die_with_parent() -> None:
    """In the child: get SIGTERM when the supervising `sim serve` process dies, however it dies."""
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(what: str, check: Any, log: Path | None, timeout: float = STEP_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except RanktableError:
            raise  # the process died: no point waiting
        except Exception:  # noqa: S110 - not ready yet (refused, 5xx, webhook down)
            pass
        time.sleep(0.3)
    tail = ""
    if log is not None and log.is_file():
        tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-3:])
    raise RanktableError(f"{what} was not ready within {timeout:.0f}s: {tail}", where=str(log or ""))


class RealPool(PoolFiles):
    """The real control plane and our controllers, owned by this process (see the module docstring)."""

    def __init__(self, config: PoolConfig) -> None:
        super().__init__(config)
        self.logs = ensure_dir(self.state_dir / "logs")
        self.procs: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.store: KubeStore | None = None
        self.kubelet: VirtualKubelet | None = None
        self.ranktable: RankTableController | None = None
        self.kubelet_api: KubeletServer | None = None
        self._stop_requested = threading.Event()

    # -- processes ---------------------------------------------------------------------------------------
    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        with open(self.logs / f"{name}.log", "ab") as log:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        self.procs.append((name, proc))
        return proc

    def _alive(self, name: str, proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is not None:
            raise RanktableError(
                f"{name} exited with code {proc.returncode}", where=str(self.logs / f"{name}.log")
            )

    def _https_ok(self, path: str) -> bool:
        context = ssl.create_default_context(cafile=str(self.state_dir / "server.crt"))
        try:
            with urllib.request.urlopen(f"{self.url}{path}", timeout=2, context=context) as resp:  # noqa: S310
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    # -- start ---------------------------------------------------------------------------------------------
    def start(self) -> RealPool:
        bins = components.bin_dir()
        module = components.volcano_module_dir()
        for stale in ("etcd", "pods", "server.crt", "server.key"):
            path = self.state_dir / stale
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
        cert, key = ensure_certificate(self.state_dir)
        self.token = secrets.token_urlsafe(32)
        tokens = self.state_dir / "tokens.csv"
        users = self.config.users
        user_tokens = {u.name: secrets.token_urlsafe(32) for u in users}
        _write_private(
            tokens,
            f'{self.token},ranktable-admin,ranktable-admin,"system:masters"\n'
            + token_lines(users, user_tokens),
        )
        self.port = self.config.port or free_port()
        try:
            self._start_processes(bins, module, cert, key, tokens)
            self._start_team(user_tokens, cert)
            self._start_controllers(cert, key)
        except BaseException:
            self.stop()
            raise
        self.write_server_file(
            control_plane="real",
            **self._confinement(),
            users=[{**u.to_json(), "kubeconfig": str(self.user_kubeconfig(u.name))} for u in users],
        )
        return self

    @property
    def confinement(self) -> Confinement | None:
        """How our kubelet confines pod processes (None before it starts)."""
        return self.kubelet.kubelet.sandboxes.confinement if self.kubelet is not None else None

    def _confinement(self) -> dict[str, object]:
        conf = self.confinement
        return {} if conf is None else {"confined": conf.active, "pods": conf.describe()}

    def _start_processes(self, bins: Path, module: Path, cert: Path, key: Path, tokens: Path) -> None:
        """etcd, then the API server on it, the controller manager, then Volcano's three components."""
        client_port = self._start_etcd(bins)
        self._start_apiserver(bins, client_port, cert, key, tokens)
        write_kubeconfig(self.kubeconfig, self.url, self.token, cert.read_bytes(), self.context)
        self._spawn(
            "kube-controller-manager",
            [
                str(bins / "kube-controller-manager"),
                f"--kubeconfig={self.kubeconfig}",
                "--leader-elect=false",
                "--controllers=garbage-collector-controller,namespace-controller,pod-garbage-collector-controller",
                "--secure-port=0",
            ],
        )
        store = KubeStore(self._api_client())
        self._install_volcano(store, module)
        self._start_volcano(bins, module, cert, key, store)

    def _start_etcd(self, bins: Path) -> int:
        """A one-member etcd on loopback without fsync; its client port once it is healthy."""
        client_port, peer_port = free_port(), free_port()
        etcd = self._spawn(
            "etcd",
            [
                str(bins / "etcd"),
                "--name=ranktable",
                f"--data-dir={self.state_dir / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{client_port}",
                f"--advertise-client-urls=http://127.0.0.1:{client_port}",
                f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}",
                f"--initial-cluster=ranktable=http://127.0.0.1:{peer_port}",
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
        )

        def etcd_ready() -> bool:
            self._alive("etcd", etcd)
            with urllib.request.urlopen(f"http://127.0.0.1:{client_port}/health", timeout=2) as resp:
                return b'"true"' in resp.read()

        _wait_for("etcd", etcd_ready, self.logs / "etcd.log")
        return client_port

    def _start_apiserver(self, bins: Path, client_port: int, cert: Path, key: Path, tokens: Path) -> None:
        """kube-apiserver on etcd, serving our certificate and tokens, until it is ready."""
        apiserver = self._spawn(
            "kube-apiserver",
            [
                str(bins / "kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{client_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self.port}",
                f"--cert-dir={self.state_dir / 'pki'}",
                f"--tls-cert-file={cert}",
                f"--tls-private-key-file={key}",
                f"--token-auth-file={tokens}",
                "--authorization-mode=RBAC",
                "--service-cluster-ip-range=10.0.0.0/24",
                f"--service-account-issuer=https://127.0.0.1:{self.port}",
                f"--service-account-key-file={self._public_key(key)}",
                f"--service-account-signing-key-file={key}",
                "--allow-privileged=false",
                # no serviceaccount token controller, no node-lifecycle controller: our kubelet stands in
                "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
                # kubectl's exec WebSocket goes through to our kubelet as is (it does not speak SPDY)
                "--feature-gates=TranslateStreamCloseWebsocketRequests=false",
                "--kubelet-preferred-address-types=ExternalIP,InternalIP,Hostname",
                f"--kubelet-client-certificate={cert}",
                f"--kubelet-client-key={key}",
                "--enable-priority-and-fairness=false",
                "--endpoint-reconciler-type=none",
                "--profiling=false",
                # watches go to etcd, compacted every 10 s: an old resourceVersion gets 410 Gone soon
                "--watch-cache=false",
                "--etcd-compaction-interval=10s",
            ],
        )

        def api_ready() -> bool:
            self._alive("kube-apiserver", apiserver)
            return self._https_ok("/readyz")

        _wait_for("kube-apiserver", api_ready, self.logs / "kube-apiserver.log")

    def _start_volcano(self, bins: Path, module: Path, cert: Path, key: Path, store: KubeStore) -> None:
        """Volcano's admission webhook, controllers and scheduler, until the default queue exists."""
        webhook_port = free_port()
        self._spawn(
            "vc-webhook-manager",
            [
                str(bins / "vc-webhook-manager"),
                f"--kubeconfig={self.kubeconfig}",
                f"--tls-cert-file={cert}",
                f"--tls-private-key-file={key}",
                f"--ca-cert-file={cert}",
                "--listen-address=127.0.0.1",
                f"--port={webhook_port}",
                f"--webhook-url=https://127.0.0.1:{webhook_port}",
                f"--enabled-admission={','.join(components.ADMISSION_PATHS)}",
            ],
        )
        conf = self.state_dir / "scheduler.conf"
        conf.write_text(SCHEDULER_CONF)
        self._spawn(
            "vc-controller-manager",
            [str(bins / "vc-controller-manager"), f"--kubeconfig={self.kubeconfig}", "--leader-elect=false"],
        )
        self._spawn(
            "vc-scheduler",
            [
                str(bins / "vc-scheduler"),
                f"--kubeconfig={self.kubeconfig}",
                "--leader-elect=false",
                f"--scheduler-conf={conf}",
                "--schedule-period=500ms",
                "--cache-dumper=false",
            ],
        )
        self._wait_webhook(store, module, webhook_port)
        queues = BY_KEY["scheduling.volcano.sh/queues"]
        _wait_for(
            "the default queue",
            lambda: store.find(queues, None, "default") is not None,
            self.logs / "vc-scheduler.log",
        )

    def _start_team(self, tokens: dict[str, str], cert: Path) -> None:
        """The team's namespaces and RBAC (`sim/real/team.py`), and a kubeconfig per member."""
        if not self.config.users:
            return
        store = KubeStore(self._api_client())
        for path, obj in team_objects(self.config.users):
            try:
                store.call("POST", path, obj)
            except errors.ApiError as exc:
                if exc.code != 409:  # already there is fine; anything else is a broken setup
                    raise
        write_user_kubeconfigs(
            [(u.name, u.namespace) for u in self.config.users],
            self.user_kubeconfig,
            self.url,
            tokens,
            cert.read_bytes(),
            self.context,
        )

    def _public_key(self, key: Path) -> Path:
        """The service-account verification key: the public half of the pool's key."""
        private = serialization.load_pem_private_key(key.read_bytes(), password=None)
        public = self.state_dir / "sa.pub"
        public.write_bytes(
            private.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        return public

    def _api_client(self) -> client.ApiClient:
        configuration = client.Configuration()
        kube_config.load_kube_config(
            config_file=str(self.kubeconfig), context=self.context, client_configuration=configuration
        )
        return client.ApiClient(configuration)

    def _install_volcano(self, store: KubeStore, module: Path) -> None:
        crd_path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        names = []
        for crd in components.crds(module):
            with contextlib.suppress(errors.ApiError):
                store.call("POST", crd_path, crd)
            names.append(crd["metadata"]["name"])

        def established() -> bool:
            for name in names:
                conds = (store.call("GET", f"{crd_path}/{name}").get("status") or {}).get("conditions") or []
                if not any(c["type"] == "Established" and c["status"] == "True" for c in conds):
                    return False
            return True

        _wait_for("Volcano's CRDs", established, None)

    def _wait_webhook(self, store: KubeStore, module: Path, port: int) -> None:
        """Create the webhook configurations, then wait until a dry-run Job passes the webhooks."""
        ca = base64.b64encode((self.state_dir / "server.crt").read_bytes()).decode()
        url = f"https://127.0.0.1:{port}"
        for doc in components.webhook_configurations(module, url, ca):
            plural = doc["kind"].lower() + "s"
            with contextlib.suppress(errors.ApiError):
                store.call("POST", f"/apis/admissionregistration.k8s.io/v1/{plural}", doc)
        probe = {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": "webhook-probe", "namespace": "default"},
            "spec": {
                "minAvailable": 1,
                "tasks": [
                    {
                        "name": "t",
                        "replicas": 1,
                        "template": {
                            "spec": {"containers": [{"name": "c", "image": "x", "command": ["true"]}]}
                        },
                    }
                ],
            },
        }

        def admitted() -> bool:
            self._alive("vc-webhook-manager", dict(self.procs)["vc-webhook-manager"])
            result = store.call(
                "POST", "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs", probe, [("dryRun", "All")]
            )
            return bool(result.get("spec", {}).get("schedulerName"))  # set by /jobs/mutate

        _wait_for("vc-webhook-manager", admitted, self.logs / "vc-webhook-manager.log")

    def _start_controllers(self, cert: Path, key: Path) -> None:
        store = KubeStore(
            self._api_client(), watched=("pods", "nodes", "configmaps", "batch.volcano.sh/jobs")
        )
        store.start()
        self.store = store
        nodes = self.config.fabric()
        errors_log = self.state_dir / "controller-errors.log"
        self.kubelet = VirtualKubelet(
            store, errors_log, nodes, self.state_dir, shared=self.config.shared_storage
        )
        self.kubelet_api = KubeletServer(self.kubelet.kubelet, store, cert, key, cert)
        self.kubelet.kubelet_port = self.kubelet_api.port
        self.kubelet_api.start()
        self.kubelet.register()
        hypernodes = BY_KEY["topology.volcano.sh/hypernodes"]
        for hn in hypernode_objects(nodes):
            hn.pop("status", None)
            with contextlib.suppress(errors.ApiError):
                store.create(hypernodes, hn)
        with contextlib.suppress(errors.ApiError):
            store.create(BY_KEY["configmaps"], tor_node_configmap(nodes))
        with contextlib.suppress(
            errors.ApiError
        ):  # the configuration vc-scheduler runs with, as Helm publishes it
            store.create(BY_KEY["configmaps"], scheduler_configmap(None))
        self.kubelet.start()
        self.ranktable = RankTableController(store, errors_log, self.config.ranktable_delay)
        self.ranktable.start()

    # -- run / stop ----------------------------------------------------------------------------------------
    def request_stop(self) -> None:
        self._stop_requested.set()

    def wait(self) -> None:
        while not self._stop_requested.wait(0.5):
            for name, proc in self.procs:
                if proc.poll() is not None:
                    with open(self.state_dir / "controller-errors.log", "a") as fh:
                        fh.write(f"{name} exited with code {proc.returncode}; stopping the pool\n")
                    return

    def stop(self, kill_pods: bool = True) -> None:
        """Stop our controllers, then every process in reverse order (SIGTERM, then SIGKILL)."""
        del kill_pods  # pods of a real control plane do not outlive it: etcd's data goes with it
        if self.ranktable is not None:
            self.ranktable.stop()
        if self.kubelet is not None:
            self.kubelet.stop_all(kill_pods=True)
        if self.kubelet_api is not None:
            self.kubelet_api.stop()
        if self.store is not None:
            self.store.stop()
        for _, proc in reversed(self.procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_SECONDS
        for _, proc in reversed(self.procs):
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        self.procs.clear()
        shutil.rmtree(self.state_dir / "etcd", ignore_errors=True)
