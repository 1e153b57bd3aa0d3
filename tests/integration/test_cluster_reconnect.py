"""#26.6: the server notices a new pool without a restart. A pool recreated (kill -9, then `sim start`)
writes a new kubeconfig, and a cluster whose CA is rotated changes only the CA file its kubeconfig names:
either way the job use cases build new clients (the server kept its old one and answered "cannot reach
the Kubernetes API" while kubectl worked, until restarted)."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from ranktable.errors import RanktableError
from ranktable.usecases.jobs import ClusterSettings, Jobs
from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.server_helpers import call

pytestmark = pytest.mark.fault


def _with_ca_file(handle: SimPoolHandle, kubeconfig: Path, ca: Path) -> None:
    """Write the pool's kubeconfig to `kubeconfig` with its CA in the file `ca` (named relatively)."""
    doc = yaml.safe_load(handle.kubeconfig.read_text())
    for entry in doc["clusters"]:
        data = entry["cluster"].pop("certificate-authority-data")
        ca.write_bytes(base64.b64decode(data))
        entry["cluster"]["certificate-authority"] = ca.name
    kubeconfig.write_text(yaml.safe_dump(doc))


def _ca_of(handle: SimPoolHandle) -> bytes:
    doc = yaml.safe_load(handle.kubeconfig.read_text())
    return base64.b64decode(doc["clusters"][0]["cluster"]["certificate-authority-data"])


def test_a_changed_ca_file_gives_new_clients(
    sim_pool_factory: Callable[..., SimPoolHandle], tmp_path: Path
) -> None:
    pool = sim_pool_factory(nodes=2, leaves=1)
    other = sim_pool_factory(nodes=2, leaves=1)  # only its CA is used: another cluster's authority
    kubeconfig, ca = tmp_path / "kubeconfig", tmp_path / "ca.pem"
    _with_ca_file(pool, kubeconfig, ca)
    jobs = Jobs(ClusterSettings(kubeconfig=str(kubeconfig), context=pool.context))
    first = jobs.client()
    assert first.list_jobs() == []
    assert jobs.client() is first  # unchanged files: the same client (its connections kept)

    ca.write_bytes(_ca_of(other))  # the CA rotated (here: to one that did not sign the pool's certificate)
    rotated = jobs.client()
    assert rotated is not first
    with pytest.raises(RanktableError):  # the new CA is in force: the pool's certificate fails against it
        rotated.list_jobs()

    ca.write_bytes(_ca_of(pool))
    back = jobs.client()
    assert back is not rotated and back.list_jobs() == []


@pytest.fixture
def kubeconfig_path(tmp_path: Path) -> Path:
    return tmp_path / "cluster" / "kubeconfig"


@pytest.fixture
def old_pool(sim_pool_factory: Callable[..., SimPoolHandle]) -> SimPoolHandle:
    return sim_pool_factory(nodes=2, leaves=1)


@pytest.fixture
def jp_server_config(old_pool: SimPoolHandle, kubeconfig_path: Path, tmp_path: Path) -> dict[str, Any]:
    pool = old_pool
    kubeconfig_path.parent.mkdir()
    kubeconfig_path.write_text(pool.kubeconfig.read_text())
    return {
        "ServerApp": {"jpserver_extensions": {"ranktable": True}},
        "Ranktable": {
            "kubeconfig": str(kubeconfig_path),
            "context": pool.context,
            "state_dir": str(tmp_path / "state"),
        },
    }


async def test_a_recreated_pool_is_used_without_a_restart(
    jp_fetch: Any,
    old_pool: SimPoolHandle,
    sim_pool_factory: Callable[..., SimPoolHandle],
    kubeconfig_path: Path,
) -> None:
    old = old_pool
    spec = {"name": "before", "image": "img:v1", "nodes": 1, "npus_per_node": 8, "command": ["sleep", "600"]}
    await call(jp_fetch, "ranktable", "jobs", method="POST", body={"spec": spec}, expect=201)
    listed = await call(jp_fetch, "ranktable", "jobs")
    assert [j["name"] for j in listed["jobs"]] == ["before"]

    old.stop()  # the pool is gone: an outage, 503 with the reason
    down = await call(jp_fetch, "ranktable", "jobs", expect=503)
    assert "reach" in down["message"].lower() or "unreachable" in down["message"].lower(), down

    new = sim_pool_factory(nodes=2, leaves=1)  # a new pool: another port, CA and token
    assert new.context == old.context
    kubeconfig_path.write_text(new.kubeconfig.read_text())
    listed = await call(jp_fetch, "ranktable", "jobs")  # the same server, no restart
    assert listed["jobs"] == []
    spec["name"] = "after"
    await call(jp_fetch, "ranktable", "jobs", method="POST", body={"spec": spec}, expect=201)
    listed = await call(jp_fetch, "ranktable", "jobs")
    assert [j["name"] for j in listed["jobs"]] == ["after"]
