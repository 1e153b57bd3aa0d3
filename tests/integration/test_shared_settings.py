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
