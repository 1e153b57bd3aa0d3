"""A routed job's Job view logs start before its route plan is computed (#8): the plan runs in the
background after the readers started; lines read before it carry no node rank, later ones the planned one."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ranktable.cluster.client import ClusterClient
from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.server_helpers import call, extension_on_pool, log_lines
from tests.integration.test_cluster_sim import INTERLEAVED

PLAN_SECONDS = 3.0  # the plan is made this slow: the first lines must not wait for it
# pods 0 and 2 share leaf-a: the plan numbers them 0 and 1, then pods 1 and 3 on leaf-b
PLANNED = {"routed-routed-1-0": 0, "routed-routed-1-1": 2, "routed-routed-1-2": 1, "routed-routed-1-3": 3}


@pytest.fixture
def pool(sim_pool_factory: Callable[..., SimPoolHandle], tmp_path: Path) -> SimPoolHandle:
    topology = tmp_path / "interleaved.yaml"
    topology.write_text(INTERLEAVED)
    return sim_pool_factory(ranktable_delay=0.2, topology=topology)


@pytest.fixture
def jp_server_config(pool: SimPoolHandle, tmp_path: Path) -> dict[str, Any]:
    return extension_on_pool(pool, tmp_path, log_batch_seconds=0.05)


async def test_a_routed_jobs_logs_start_before_its_plan(
    jp_fetch: Any, jp_ws_fetch: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = 'for i in $(seq 1 200); do echo "step $i"; sleep 0.1; done'
    spec = {
        "name": "routed",
        "image": "bert_pretrain_mindspore:v1",
        "nodes": 4,
        "npus_per_node": 8,
        "routing": True,
        "command": ["/bin/bash", "-c", script],
    }
    await call(jp_fetch, "ranktable", "jobs", method="POST", body={"spec": spec}, expect=201)
    for _ in range(300):  # running, its rank table completed: the plan can be made
        table = await call(jp_fetch, "ranktable", "jobs", "default", "routed", "ranktable")
        if table["table_status"] == "completed":
            break
        await asyncio.sleep(0.2)
    assert table["table_status"] == "completed"

    real = ClusterClient.planned_node_ranks
    planning: list[tuple[str, float]] = []

    def slow_plan(self: ClusterClient, name: str, job: dict[str, Any] | None = None) -> dict[str, int]:
        planning.append((threading.current_thread().name, time.monotonic()))
        time.sleep(PLAN_SECONDS)
        return real(self, name, job)

    monkeypatch.setattr(ClusterClient, "planned_node_ranks", slow_plan)
    ws = await jp_ws_fetch("ranktable", "stream")
    try:
        opened = time.monotonic()
        ws.write_message(json.dumps({"op": "subscribe", "id": "l", "channel": "logs", "job": "routed"}))
        first_at = None
        ranks: dict[str, set[Any]] = {}
        while not (ranks and all(PLANNED[p] in r for p, r in ranks.items()) and len(ranks) == 4):
            msg = json.loads(await asyncio.wait_for(ws.read_message(), 30))
            assert msg["id"] == "l" and msg["type"] == "data", msg
            first_at = first_at or time.monotonic()
            for line in log_lines(msg["data"]):
                ranks.setdefault(line["pod"], set()).add(line["rank"])
            assert time.monotonic() - opened < 30
        assert first_at is not None and first_at - opened < PLAN_SECONDS - 1.0, first_at - opened
        # before the plan: no node rank (not the pod index); after it: the planned one, nothing else
        assert all(r <= {None, PLANNED[p]} for p, r in ranks.items()), ranks
        assert any(None in r for r in ranks.values()), "no line came before the plan"
        assert [name for name, _ in planning] == ["log-plan-routed"]  # once, in the background
    finally:
        ws.close()
        await call(jp_fetch, "ranktable", "jobs", "default", "routed", method="DELETE")
