"""Small builders shared by the simulator tests: Volcano jobs as data, and polling with a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from ranktable.compose.manifests import one_pod_per_node

T = TypeVar("T")
NPU = "huawei.com/ascend-1980"


def volcano_job(
    name: str,
    nodes: int,
    command: list[str],
    npus: int = 8,
    *,
    restart: str = "OnFailure",
    plugins: dict[str, list[str]] | None = None,
    max_retry: int = 3,
    env: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A Volcano Job shaped like the platform guide's (one task, NPU pods, anti-affinity per host)."""
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {"ring-controller.cce": "ascend-1980"}},
        "spec": {
            "minAvailable": nodes,
            "schedulerName": "volcano",
            "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
            "plugins": plugins
            if plugins is not None
            else {
                "configmap1980": ["--rank-table-version=v2"],
                "env": [],
                "svc": ["--publish-not-ready-addresses=true"],
            },
            "maxRetry": max_retry,
            "queue": "default",
            "tasks": [
                {
                    "name": "worker",
                    "replicas": nodes,
                    "template": {
                        "metadata": {"labels": {"app": "train", "ring-controller.cce": "ascend-1980"}},
                        "spec": {
                            "affinity": one_pod_per_node(name),
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "train:v1",
                                    "command": command,
                                    "env": env or [],
                                    "resources": {"requests": {NPU: str(npus)}, "limits": {NPU: str(npus)}},
                                }
                            ],
                            "nodeSelector": {"accelerator/huawei-npu": "ascend-1980"},
                            "restartPolicy": restart,
                        },
                    },
                }
            ],
        },
    }


def rank_table_configmap(job: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"configmap1980-{job}", "labels": {"ring-controller.cce": "ascend-1980"}},
        "data": {"jobstart_hccl.json": '{\n    "status":"initializing"\n}\n'},
    }


def eventually(
    fn: Callable[[], T | None], timeout: float = 15.0, what: str = "condition", every: float = 0.05
) -> T:
    """Poll `fn` until it returns something truthy (no busy loop: `every` seconds apart)."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})")


def command_pod(
    name: str, command: list[str], restart: str = "Never", env: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A bare pod running `command` (the image is ignored by the simulated kubelet), with `env` if given."""
    container: dict[str, Any] = {"name": "main", "image": "ignored", "command": command}
    if env is not None:
        container["env"] = env
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"restartPolicy": restart, "containers": [container]},
    }


def shell_pod(
    name: str, script: str, restart: str = "Never", env: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A bare pod running `sh -c script`."""
    return command_pod(name, ["sh", "-c", script], restart, env)
