"""Pod sandboxes for the simulated kubelet: a directory per pod, the files the platform would mount
there, and the environment its processes see.

Images are ignored, so `/user/config` (the rank table ConfigMap) and `/etc/volcano` (the svc plugin's
hosts) are copied into the sandbox and any env value or working directory under them is rewritten.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ranktable.sim.controllers.api import ObjectStore
from ranktable.sim.controllers.common import DEVICES_ANNOTATION, JOB_NAME, Obj
from ranktable.sim.controllers.logs import ensure_dir
from ranktable.sim.k8s.resources import CONFIGMAPS, JOBS, SECRETS

CONFIG_MOUNT = "/user/config"
VOLCANO_MOUNT = "/etc/volcano"
BIN_DIR = str(Path(sys.executable).parent)  # so `ranktable wait` / `ranktable route` work inside pods
_MOUNTED = re.compile(r"(?<![\w./-])(/user/config|/etc/volcano)(?![\w.-])")
_VAR_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


POD_UID = POD_GID = 10001  # the unprivileged user pod processes run as when the pool runs as root


@dataclass(frozen=True)
class Confinement:
    """How pod processes are confined: bubblewrap namespaces, and an unprivileged user when we are root."""

    bwrap: str | None
    setpriv: str | None
    uid: int | None  # None: keep ours (we are not root)
    reason: str = ""  # why pods run unconfined (empty when they are confined)

    @staticmethod
    def detect() -> Confinement:
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            return Confinement(None, None, None, "bubblewrap is not installed (apt-get install bubblewrap)")
        if os.geteuid() != 0:  # already unprivileged; namespaces need an unprivileged user namespace
            if _works([bwrap, "--unshare-user", "--bind", "/", "/", "true"]):
                return Confinement(bwrap, None, None)
            return Confinement(
                None,
                None,
                None,
                "bubblewrap cannot create a user namespace here (kernel.unprivileged_userns_clone=0, "
                "or a container without user namespaces): run the pool as root or allow them",
            )
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            return Confinement(None, None, None, "setpriv is not installed (apt-get install util-linux)")
        return Confinement(bwrap, setpriv, POD_UID)

    @property
    def active(self) -> bool:
        return self.bwrap is not None

    def describe(self) -> str:
        """One line for `sim start` / `sim status`: how pods run, or why they are not confined."""
        if not self.active:
            return f"UNCONFINED: pod processes run as this user with its rights ({self.reason})"
        who = f"uid {self.uid}" if self.uid is not None else "this user"
        return f"confined: own mount, IPC and UTS namespaces (bubblewrap), as {who}"


def _works(argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, capture_output=True, timeout=10, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _exposed_python() -> list[Path]:
    """What a pod needs to run our Python (`ranktable wait`, `ranktable route`, training scripts)."""
    paths = {Path(sys.prefix), Path(sys.base_prefix), Path(os.path.realpath(sys.executable)).parents[1]}
    paths.add(Path(__file__).resolve().parents[3])  # the ranktable source tree (editable installs)
    return sorted(p for p in paths if p.is_dir())


def _hidden_ancestors(paths: list[Path]) -> list[Path]:
    """The topmost directories on the way to `paths` that others may not enter: each becomes an empty
    tmpfs in the pod (hiding what else is in it) and the paths are bound back on top."""
    out: set[Path] = set()
    for path in paths:
        for parent in reversed(path.parents):
            if parent != Path("/") and not parent.stat().st_mode & stat.S_IXOTH:
                out.add(parent)
                break
    return sorted(p for p in out if not any(q in p.parents for q in out))


def hide_and_bind_back(binds: list[tuple[Path, str]]) -> tuple[list[str], list[Path]]:
    """bubblewrap arguments that hide the topmost folders others may not enter on the way to each
    `(path, "--bind" | "--ro-bind")` behind an empty tmpfs and bind the paths back through folders they
    may enter; and those hidden folders."""
    hiddens = _hidden_ancestors([path for path, _ in binds])
    args: list[str] = []
    for hidden in hiddens:
        args += ["--tmpfs", str(hidden)]
        for path, how in binds:
            if hidden in path.parents:
                between = [d for d in reversed(path.parents) if hidden in d.parents]
                args += [a for d in between for a in ("--perms", "0755", "--dir", str(d))]
                args += [how, str(path), str(path)]
    return args, hiddens


@dataclass
class PodSandbox:
    root: Path
    files: dict[str, str] = field(default_factory=dict)  # relative path -> content written


def field_ref(pod: Obj, path: str) -> str:
    meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName", "default"),
        "status.hostIP": status.get("hostIP"),
        "status.podIP": status.get("podIP"),
    }
    if path in simple:
        return str(simple[path] or "")
    m = re.match(r"^metadata\.(labels|annotations)\['(.+)'\]$", path)
    if m:
        return str((meta.get(m.group(1)) or {}).get(m.group(2), ""))
    return ""


def expand(text: str, env: dict[str, str]) -> str:
    return _VAR_REF.sub(lambda m: env.get(m.group(1), m.group(0)), text)


def npu_smi_info(devices: list[int]) -> str:
    """What `npu-smi info` prints on a server, for the NPUs allocated to this pod."""

    def row(a: str, b: str, c: str) -> str:
        return f"| {a:<25} | {b:<13} | {c:<50} |"

    rule = "+" + "-" * 27 + "+" + "-" * 15 + "+" + "-" * 52 + "+"
    title = "npu-smi 23.0.rc3 (ranktable simulated pool)        Version: 23.0.rc3"
    lines = [
        "+" + "-" * 96 + "+",
        f"| {title:<94} |",
        rule,
        row("NPU   Name", "Health", "Power(W)    Temp(C)           Hugepages-Usage(page)"),
        row("Chip", "Bus-Id", "AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)"),
        rule.replace("-", "="),
    ]
    for d in devices:
        lines += [
            row(f"{d:<5} 910B3", "OK", "93.5        37                0    / 0"),
            row("0", f"0000:{0xC1 + d:02X}:00.0", "0           0    / 0          3388 / 65536"),
            rule,
        ]
    if not devices:
        lines.append(f"| {'No NPU is allocated to this pod (it requests no huawei.com/ascend-1980).':<94} |")
    return "\n".join(lines) + "\n"


def write_npu_smi(bin_dir: Path, pod: Obj) -> None:
    """A stand-in `npu-smi` on the pod's PATH: `npu-smi info` lists the pod's NPUs as the real tool does."""
    text = (pod["metadata"].get("annotations") or {}).get(DEVICES_ANNOTATION, "")
    devices = sorted(int(p.rsplit("-", 1)[1]) for p in text.split(",") if "-" in p)
    ensure_dir(bin_dir).chmod(0o755)  # on the pod user's PATH
    script = bin_dir / "npu-smi"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$1" != "info" ]; then echo "usage: npu-smi info (simulated pool)" >&2; exit 2; fi\n'
        "cat <<'NPU_SMI_EOF'\n" + npu_smi_info(devices) + "NPU_SMI_EOF\n"
    )
    script.chmod(0o755)


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def shared_mounts(pod: Obj, shared: tuple[Path, ...]) -> list[tuple[Path, bool]]:
    """(path, read_only) of each hostPath volume of `pod` that is node-mounted shared storage (at or under
    one of `shared`) and that a container mounts at the same path: what the pod sees of it. Other
    hostPath volumes (the NPU driver's) are ignored, as the images are: the pods see nothing else of the
    host's private folders."""
    if not shared:
        return []
    spec = pod.get("spec") or {}
    host_paths = {
        str(v.get("name")): str((v.get("hostPath") or {}).get("path") or "")
        for v in spec.get("volumes") or []
        if isinstance(v, dict) and v.get("hostPath")
    }
    roots = tuple(Path(os.path.realpath(r)) for r in shared)
    out: dict[Path, bool] = {}
    for container in spec.get("containers") or []:
        for mount in container.get("volumeMounts") or []:
            source = host_paths.get(str(mount.get("name")), "")
            if not source.startswith("/") or mount.get("mountPath") != source or mount.get("subPath"):
                continue
            real = Path(os.path.realpath(source))  # a symlink out of the shared storage is not followed
            if real == Path(source) and real.is_dir() and any(_under(real, r) for r in roots):
                out[real] = out.get(real, True) and bool(mount.get("readOnly"))
    return sorted(out.items())


class Sandboxes:
    """Sandboxes of the pods this kubelet runs, under `root`; `shared`: the host folders that stand for
    storage mounted on every node (SFS Turbo at /mnt/sfs_turbo on a Lite pool), which pods reach through
    hostPath volumes at the same path."""

    def __init__(
        self,
        store: ObjectStore,
        root: Path,
        confinement: Confinement | None = None,
        shared: tuple[Path, ...] = (),
    ) -> None:
        self.store = store
        self.root = root
        self.confinement = confinement if confinement is not None else Confinement.detect()
        self.shared = shared
        self._boxes: dict[str, PodSandbox] = {}

    def confine(self, pod: Obj, box: PodSandbox, argv: list[str], cwd: Path) -> list[str]:
        """`argv` run in the pod's own IPC, UTS (hostname = pod name) and mount namespaces, as an
        unprivileged user when the pool runs as root: it can bind no privileged port, signal no host
        process, and read only what others may read (plus its sandbox)."""
        conf = self.confinement
        if not conf.active or conf.bwrap is None:
            return argv
        if conf.uid is not None:
            self._own(box, cwd)
        exposed = _exposed_python()
        mounts = shared_mounts(pod, self.shared)
        binds = [
            *((p, "--ro-bind") for p in exposed),
            (box.root, "--bind"),
            *((p, "--ro-bind" if ro else "--bind") for p, ro in mounts),
        ]
        hidden_args, hiddens = hide_and_bind_back(binds)
        command = [conf.bwrap, "--bind", "/", "/", "--dev", "/dev", *hidden_args]
        for path, read_only in mounts:  # in plain sight already: bound again for its read-only flag
            if not any(h in path.parents for h in hiddens) and read_only:
                command += ["--ro-bind", str(path), str(path)]
        if conf.uid is not None:  # tools that look the user up (ssh-keygen, whoami) find the pod user
            for name, entry in (
                ("passwd", f"pod:x:{conf.uid}:{conf.uid}:simulated pod user:{box.root / 'work'}:/bin/sh\n"),
                ("group", f"pod:x:{conf.uid}:\n"),
            ):
                users = box.root / f".{name}"
                users.write_text(Path(f"/etc/{name}").read_text() + entry)
                command += ["--ro-bind", str(users), f"/etc/{name}"]
        command += ["--unshare-ipc", "--unshare-uts", "--hostname", pod["metadata"]["name"][:63]]
        if conf.uid is None:
            command += ["--unshare-user"]
        command += ["--chdir", str(cwd), "--"]
        if conf.setpriv is not None and conf.uid is not None:
            command += [conf.setpriv, f"--reuid={conf.uid}", f"--regid={conf.uid}", "--clear-groups"]
            command += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
        return command + argv

    def _own(self, box: PodSandbox, cwd: Path) -> None:
        """Give the pod user what it writes: its sandbox (work, logs, the exit files), not the rest."""
        uid = self.confinement.uid
        assert uid is not None
        mounts = [box.root / m.strip("/") for m in (CONFIG_MOUNT, VOLCANO_MOUNT)]
        for path in (box.root, cwd, *box.root.glob("logs/*"), box.root / "logs", *mounts):
            with contextlib.suppress(OSError):
                os.chown(path, uid, uid)
        for path in (box.root / "work").rglob("*"):
            with contextlib.suppress(OSError):
                if path.stat().st_uid == 0:
                    os.chown(path, uid, uid, follow_symlinks=False)
        with contextlib.suppress(OSError):
            os.chown(box.root / "work", uid, uid)

    def get(self, pod: Obj) -> PodSandbox:
        """The pod's sandbox (created on first use): `<root>/<ns>/<pod>-<uid8>/`."""
        uid = pod["metadata"]["uid"]
        box = self._boxes.get(uid)
        if box is None:
            root = self.root / pod["metadata"]["namespace"] / f"{pod['metadata']['name']}-{uid[:8]}"
            ensure_dir(root / "work")
            box = self._boxes[uid] = PodSandbox(root)
            write_npu_smi(root / "bin", pod)
        return box

    def forget(self, uid: str) -> None:
        """Drop what is remembered of a deleted pod (its files stay until the pool's state is reset)."""
        self._boxes.pop(uid, None)

    def sync_files(
        self, pod: Obj, box: PodSandbox, configmaps: dict[tuple[str, str], Obj] | None = None
    ) -> None:
        """Project the rank-table ConfigMap and the svc plugin's hosts files into the sandbox."""
        job = (pod["metadata"].get("labels") or {}).get(JOB_NAME)
        if not job:
            return
        ns = pod["metadata"]["namespace"]
        if "work/.ssh/id_rsa" not in box.files:
            self._project_ssh(box, self.store.find(SECRETS, ns, f"{job}-ssh"))
        for cm_name, mount in ((f"configmap1980-{job}", CONFIG_MOUNT), (f"{job}-svc", VOLCANO_MOUNT)):
            if configmaps is not None:
                cm = configmaps.get((ns, cm_name))
            else:
                cm = self.store.find(CONFIGMAPS, ns, cm_name)
            if cm is None:
                continue
            for key, value in (cm.get("data") or {}).items():
                rel = f"{mount.strip('/')}/{key}"
                if box.files.get(rel) == value or "/" in key:
                    continue
                target = box.root / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp = target.with_name(f".{key}.tmp")
                tmp.write_text(value)
                tmp.replace(target)
                box.files[rel] = value

    def _project_ssh(self, box: PodSandbox, secret: Obj | None) -> None:
        """The `ssh` plugin's Secret, mounted (mode 0600) where the pod's user finds it: `$HOME/.ssh`."""
        if secret is None:
            return
        target = ensure_dir(box.root / "work" / ".ssh")
        target.chmod(0o700)
        for key, value in sorted((secret.get("data") or {}).items(), key=lambda kv: kv[0] == "id_rsa"):
            if "/" in key:
                continue
            path = target / key
            path.write_bytes(base64.b64decode(value))
            path.chmod(0o600)
            if self.confinement.uid is not None:  # the pod's user owns its keys, as on a real mount
                os.chown(path, self.confinement.uid, self.confinement.uid)
                os.chown(target, self.confinement.uid, self.confinement.uid)
            box.files[f"work/.ssh/{key}"] = value

    @staticmethod
    def map_path(box: PodSandbox, value: str) -> str:
        """Point every mention of a mounted path (also inside a shell command line) into the sandbox."""
        return _MOUNTED.sub(lambda m: str(box.root) + m.group(1), value)

    def env(self, pod: Obj, container: Obj, box: PodSandbox) -> dict[str, str]:
        ns = pod["metadata"]["namespace"]
        env: dict[str, str] = {
            "PATH": f"{box.root / 'bin'}:{BIN_DIR}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": str(box.root / "work"),
            "HOSTNAME": pod["metadata"]["name"],
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "PYTHONUNBUFFERED": "1",
            "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        }
        if "VIRTUAL_ENV" in os.environ:
            env["VIRTUAL_ENV"] = os.environ["VIRTUAL_ENV"]
        for src in container.get("envFrom") or []:
            ref = src.get("configMapRef") or src.get("secretRef")
            if not ref:
                continue
            rtype = CONFIGMAPS if "configMapRef" in src else SECRETS
            obj = self.store.find(rtype, ns, ref.get("name", "")) or {}
            for k, v in (obj.get("data") or {}).items():
                env[src.get("prefix", "") + k] = v if rtype is CONFIGMAPS else base64.b64decode(v).decode()
        for item in container.get("env") or []:
            name = item.get("name")
            if not name:
                continue
            if "value" in item:
                env[name] = expand(str(item["value"]), env)
                continue
            source = item.get("valueFrom") or {}
            if "fieldRef" in source:
                env[name] = field_ref(pod, source["fieldRef"].get("fieldPath", ""))
            elif "configMapKeyRef" in source or "secretKeyRef" in source:
                ref = source.get("configMapKeyRef") or source.get("secretKeyRef") or {}
                rtype = CONFIGMAPS if "configMapKeyRef" in source else SECRETS
                obj = self.store.find(rtype, ns, ref.get("name", "")) or {}
                raw = (obj.get("data") or {}).get(ref.get("key", ""), "")
                env[name] = raw if rtype is CONFIGMAPS else base64.b64decode(raw).decode()
            else:
                env[name] = ""
        job_name = (pod["metadata"].get("labels") or {}).get(JOB_NAME)
        if job_name and "RANK_TABLE_FILE" not in env:
            job = self.store.find(JOBS, ns, job_name)
            if job is not None and "configmap1980" in ((job.get("spec") or {}).get("plugins") or {}):
                env["RANK_TABLE_FILE"] = f"{CONFIG_MOUNT}/jobstart_hccl.json"
        return {k: self.map_path(box, v) for k, v in env.items()}
