"""Pod sandboxes for the simulated kubelet: a directory per pod, the files the platform would mount
there, and the environment its processes see.

Images are ignored, so `/user/config` (the rank table ConfigMap) and `/etc/volcano` (the svc plugin's
hosts) are copied into the sandbox and any env value or working directory under them is rewritten.
"""

from __future__ import annotations

import base64
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ranktable.sim.controllers.api import ObjectStore
from ranktable.sim.controllers.common import DEVICES_ANNOTATION, JOB_NAME, Obj
from ranktable.sim.controllers.logs import ensure_dir
from ranktable.sim.k8s.resources import BY_KEY

CONFIGMAPS = BY_KEY["configmaps"]
SECRETS = BY_KEY["secrets"]
JOBS = BY_KEY["batch.volcano.sh/jobs"]
CONFIG_MOUNT = "/user/config"
VOLCANO_MOUNT = "/etc/volcano"
BIN_DIR = str(Path(sys.executable).parent)  # so `ranktable wait` / `ranktable route` work inside pods
_MOUNTED = re.compile(r"(?<![\w./-])(/user/config|/etc/volcano)(?![\w.-])")
_VAR_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


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
    ensure_dir(bin_dir)
    script = bin_dir / "npu-smi"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$1" != "info" ]; then echo "usage: npu-smi info (simulated pool)" >&2; exit 2; fi\n'
        "cat <<'NPU_SMI_EOF'\n" + npu_smi_info(devices) + "NPU_SMI_EOF\n"
    )
    script.chmod(0o755)


class Sandboxes:
    """Sandboxes of the pods this kubelet runs, under `root`."""

    def __init__(self, store: ObjectStore, root: Path) -> None:
        self.store = store
        self.root = root
        self._boxes: dict[str, PodSandbox] = {}

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

    @staticmethod
    def _project_ssh(box: PodSandbox, secret: Obj | None) -> None:
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
