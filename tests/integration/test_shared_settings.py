"""Every surface sees the JupyterLab server's cluster (#24): `c.Ranktable` is exported to the processes
the server starts, the magics and the CLI take it as their default, remote kernels get what exists there."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from ranktable.cluster.kube import resolve_kubeconfig
from ranktable.home import export_shared_settings, shared_settings
from ranktable.remote.kernel_remote import inherited_exports


def test_exported_settings_are_the_magics_and_cli_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ranktable.magics import RanktableMagics

    monkeypatch.delenv("RANKTABLE_HOME", raising=False)  # only what this test exports
    env: dict[str, str] = {}
    export_shared_settings(
        {"kubeconfig": "/k/config", "context": "", "namespace": "team-a", "state_dir": None}, env
    )
    assert env == {"RANKTABLE_KUBECONFIG": "/k/config", "RANKTABLE_NAMESPACE": "team-a"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "users-own"))
    assert shared_settings() == {"kubeconfig": "/k/config", "namespace": "team-a"}
    magics = RanktableMagics(shell=None)
    assert (magics.kubeconfig, magics.context, magics.namespace) == ("/k/config", None, "team-a")
    assert resolve_kubeconfig(None) == "/k/config"  # `ranktable job list` in a JupyterLab terminal
    assert resolve_kubeconfig("/explicit") == "/explicit"
    monkeypatch.delenv("RANKTABLE_KUBECONFIG")
    assert resolve_kubeconfig(None) == str(tmp_path / "users-own")


def test_a_remote_kernel_gets_only_the_paths_its_machine_has(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\n")
    script = inherited_exports(
        {
            "kubeconfig": str(kubeconfig),
            "state_dir": str(tmp_path / "not-here"),
            "namespace": "it's",
            "context": "sim",
        }
    )
    shown = subprocess.run(
        [
            "/bin/sh",
            "-c",
            script + 'echo "$RANKTABLE_KUBECONFIG|${RANKTABLE_HOME-unset}|$RANKTABLE_NAMESPACE"',
        ],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin"},
    ).stdout
    assert shown.strip() == f"{kubeconfig}|unset|it's"


@pytest.fixture
def jp_server_config(tmp_path: Path) -> dict[str, Any]:
    return {
        "ServerApp": {"jpserver_extensions": {"ranktable": True}},
        "Ranktable": {
            "state_dir": str(tmp_path / "state"),
            "kubeconfig": str(tmp_path / "pool-kubeconfig"),
            "namespace": "team-a",
        },
    }


async def test_a_kernel_jupyterlab_starts_inherits_the_servers_cluster(
    jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any, tmp_path: Path
) -> None:
    from tests.integration.test_kernel_server import _execute

    body = {"path": "journey.ipynb", "type": "notebook", "kernel": {"name": "python3"}}
    created = json.loads((await jp_fetch("api", "sessions", method="POST", body=json.dumps(body))).body)
    kernel_id = created["kernel"]["id"]
    ws = await jp_ws_fetch("api", "kernels", kernel_id, "channels")
    try:
        code = (
            "from ranktable.magics import RanktableMagics as M; m = M(shell=None); "
            "print(m.kubeconfig, m.namespace, __import__('os').environ['RANKTABLE_HOME'])"
        )
        out, reply = await _execute(ws, code, uuid.uuid4().hex)
    finally:
        ws.close()
        await jp_fetch("api", "sessions", created["id"], method="DELETE")
    assert reply["status"] == "ok", reply
    assert out.split() == [str(tmp_path / "pool-kubeconfig"), "team-a", str(tmp_path / "state")]
    assert "RANKTABLE_KUBECONFIG" not in os.environ  # the server's own environment is left alone


def test_a_profiles_shared_storage_from_the_cli_places_job_scripts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """ModelArts-like: the instance mounts SFS Turbo at /data/sfs, the pods by a PVC at /mnt/sfs_turbo."""
    import yaml

    from ranktable.cli import main

    monkeypatch.setenv("RANKTABLE_HOME", str(tmp_path / "home"))
    add = ["ssh", "add", "nb1", "--host", "10.0.0.5", "--shared", "/data/sfs"]
    assert main([*add, "--shared-pvc", "sfs:sfs-turbo-claim:/mnt/sfs_turbo"]) == 0
    stored = json.loads((tmp_path / "home" / "profiles.json").read_text())["profiles"]["nb1"]
    assert stored["shared"]["volume"]["claim"] == "sfs-turbo-claim"
    compose = ["job", "compose", "--name", "bert", "--image", "img", "--npus", "8"]
    assert main([*compose, "--script", "/data/sfs/project/train.py"]) == 0
    out, err = capsys.readouterr()
    pod = next(d for d in yaml.safe_load_all(out) if d["kind"] == "Job")["spec"]["tasks"][0]["template"][
        "spec"
    ]
    assert {"name": "sfs", "persistentVolumeClaim": {"claimName": "sfs-turbo-claim"}} in pod["volumes"]
    assert "/mnt/sfs_turbo/project/train.py" in json.dumps(pod["containers"][0])
    assert "/data/sfs/project/train.py on the instance is /mnt/sfs_turbo/project/train.py" in err

    # the instance's own disk is not shared: the warning names the volume that would show a script
    assert main([*compose, "--script", "/home/ma-user/work/train.py"]) == 0
    assert "lies outside every mounted volume (mounted: none)" in capsys.readouterr().err
    # half a shared-storage definition is one clear error
    assert main(["ssh", "add", "nb2", "--host", "h", "--shared", "/data/sfs"]) != 0
    assert "--shared: needs the volume pods mount it with" in capsys.readouterr().err
