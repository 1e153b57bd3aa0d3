"""#26.6: while the cluster is unreachable, job endpoints answer 503 with the reason (they answered 400,
as if the request were wrong)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.server_helpers import call

pytestmark = pytest.mark.fault


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # nothing listens there once closed


@pytest.fixture
def jp_server_config(tmp_path: Path) -> dict[str, Any]:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "down", "cluster": {"server": f"https://127.0.0.1:{_closed_port()}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "down", "context": {"cluster": "down", "user": "u"}}],
                "current-context": "down",
            }
        )
    )
    return {
        "ServerApp": {"jpserver_extensions": {"ranktable": True}},
        "Ranktable": {"state_dir": str(tmp_path / "state"), "kubeconfig": str(kubeconfig)},
    }


@pytest.mark.parametrize("path", [("ranktable", "jobs"), ("ranktable", "jobs", "default", "x")])
async def test_job_endpoints_answer_503_with_the_reason_while_the_cluster_is_down(
    jp_fetch: Any, path: tuple[str, ...]
) -> None:
    reply = await call(jp_fetch, *path, expect=503)
    assert "cannot reach the Kubernetes API" in reply["message"] and reply["fix"]
