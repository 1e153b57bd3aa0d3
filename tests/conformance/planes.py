"""A running control plane as the scenarios see it, and the divergence table they are checked against."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from tests.integration.sim_helpers import eventually

DOC = Path(__file__).resolve().parents[2] / "docs" / "conformance.md"
KUBECTL_TIMEOUT = 120


@dataclass
class Plane:
    name: str
    kubeconfig: Path
    state_dir: Path
    home: Path
    shared: Path  # a folder every node mounts (`sim start --shared-storage`): pods reach it by hostPath
    _api: Any = field(default=None, repr=False)

    @property
    def env(self) -> dict[str, str]:
        # the CLI in-process: this suite checks the cluster's semantics; the warm CLI server has its own
        # tests (test_cli_warm), and a known flake there (a forked child ending without an exit code under
        # load, #28) must not hide a Kubernetes divergence
        return dict(os.environ, KUBECONFIG=str(self.kubeconfig), HOME=str(self.home), RANKTABLE_WARM="0")

    def api(self) -> client.ApiClient:
        if self._api is None:
            configuration = client.Configuration()
            config.load_kube_config(config_file=str(self.kubeconfig), client_configuration=configuration)
            self._api = client.ApiClient(configuration)
        return self._api

    def kubectl(
        self, *args: str, stdin: str | None = None, timeout: float = KUBECTL_TIMEOUT
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["kubectl", *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=timeout,
            check=False,
        )

    def ranktable(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ranktable", *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=timeout,
            check=False,
        )


def divergences() -> dict[tuple[str, str], str]:
    """(check, plane) -> reason, from the table in docs/conformance.md (rows `| check | plane | ... |`)."""
    rows: dict[tuple[str, str], str] = {}
    in_table = False
    for line in DOC.read_text().splitlines():
        if line.startswith("| check |"):
            in_table = True
            continue
        if in_table and not line.startswith("|"):
            in_table = False
        if in_table and not re.match(r"^\|\s*-", line):
            cells = [c.strip().strip("`") for c in line.strip("|").split("|")]
            rows[(cells[0], cells[1])] = cells[2]
    return rows


def conform(plane: Plane, check: str, scenario: Callable[[], None]) -> None:
    """Run `scenario` (asserts Kubernetes' behaviour); a listed divergence must still diverge."""
    listed = divergences().get((check, plane.name))
    try:
        scenario()
    except AssertionError:
        if listed is None:
            raise
        return
    if listed is not None:
        pytest.fail(f"`{check}` now behaves like Kubernetes on {plane.name}: remove its row from {DOC.name}")


def wait_until(what: str, fn: Callable[[], Any], timeout: float = 90.0, every: float = 0.5) -> Any:
    return eventually(fn, timeout, what, every=every)


def raw(
    plane: Plane,
    method: str,
    path: str,
    body: Any = None,
    query: list[tuple[str, str]] | None = None,
    content_type: str = "application/json",
) -> tuple[int, Any]:
    """A request through the official client's transport; returns (status, decoded body)."""
    api = plane.api()
    params = api.param_serialize(
        method=method,
        resource_path=path,
        query_params=query or [],
        header_params={"Accept": "application/json", "Content-Type": content_type},
        body=body,
        auth_settings=["BearerToken"],
    )
    resp = api.call_api(*params, _request_timeout=(5, 60))
    resp.read()
    text = (resp.data or b"").decode()
    try:
        return resp.status, json.loads(text) if text else None
    except ValueError:
        return resp.status, text
