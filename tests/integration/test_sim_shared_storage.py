"""Shared storage in the simulated pool (#24): a folder of the simulated Notebook instance that pods
mount through a hostPath volume at the same absolute path, the pods still unprivileged."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from kubernetes import client

from ranktable.sim.controllers.sandbox import POD_UID, Confinement
from tests.integration.sim_helpers import command_pod, eventually


def _with_volume(pod: dict[str, Any], host_path: Path, mount_path: Path) -> dict[str, Any]:
    pod["spec"]["volumes"] = [{"name": "shared", "hostPath": {"path": str(host_path)}}]
    pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "shared", "mountPath": str(mount_path)}]
    return pod


def _finished_log(core: client.CoreV1Api, name: str) -> str:
    eventually(
        lambda: core.read_namespaced_pod(name, "default").status.phase in ("Succeeded", "Failed"),
        timeout=30,
        what=f"{name} to finish",
    )
    return str(core.read_namespaced_pod_log(name, "default"))


def test_pods_see_the_shared_folder_at_the_same_path_unprivileged(
    sim_pool_factory: Any, tmp_path: Path
) -> None:
    # tmp_path's ancestors are private (0700): only the bind of the shared folder shows it to the pod user
    instance = tmp_path / "instance"
    shared = instance / "shared"
    (shared / "project").mkdir(parents=True)
    for folder in (shared, shared / "project"):
        folder.chmod(0o755)
    script = shared / "project" / "train.py"
    script.write_text("import os\nprint('uid', os.getuid(), 'ran', __file__)\n")
    script.chmod(0o644)
    private = instance / "work"
    private.mkdir()
    (private / "secret.txt").write_text("instance disk\n")
    pool = sim_pool_factory(nodes=2, leaves=1, shared_storage=(shared,))
    core = client.CoreV1Api(pool.api_client())
    run = [sys.executable, str(script)]

    core.create_namespaced_pod("default", _with_volume(command_pod("mounted", run), shared, shared))
    log = _finished_log(core, "mounted")
    uid = POD_UID if os.geteuid() == 0 else os.geteuid()
    assert f"uid {uid} ran {script}" in log
    if os.geteuid() == 0:
        assert Confinement.detect().active, "bubblewrap is missing: `make system-deps` installs it"

        # without the volume the pod cannot open it: the script is only on the instance's shared storage
        core.create_namespaced_pod("default", command_pod("unmounted", run))
        assert "can't open file" in _finished_log(core, "unmounted")
        # a hostPath outside the pool's shared storage is not mounted (the instance's own disk stays its own)
        peek = command_pod("peek", ["cat", str(private / "secret.txt")])
        core.create_namespaced_pod("default", _with_volume(peek, private, private))
        assert "instance disk" not in _finished_log(core, "peek")
