"""REST: the layout of a diagnosed job marks its first failing rank, the straggler and the hung rank on
their own NPUs (the 8-node scenario of test_observe_sim), in the SVG and in the answer's `marks`."""

from __future__ import annotations

import asyncio
import json
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from ranktable.cli import main
from ranktable.cluster.client import ClusterClient
from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.server_helpers import extension_on_pool
from tests.integration.test_observe_sim import FIRST, HUNG, SLOW, manifests
from tests.integration.test_server_api import response_schema

NS = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def pool(sim_pool_factory: Callable[..., SimPoolHandle]) -> SimPoolHandle:
    return sim_pool_factory(ranktable_delay=0.2)


@pytest.fixture
def jp_server_config(pool: SimPoolHandle, tmp_path: Path) -> dict[str, Any]:
    return extension_on_pool(pool, tmp_path, observability={"hang_floor_s": 3.0})


async def test_layout_of_a_diagnosed_job_marks_its_ranks(
    jp_fetch: Any, pool: SimPoolHandle, tmp_path: Path
) -> None:
    client = ClusterClient(str(pool.kubeconfig), pool.context, "default")
    client.submit(manifests())
    client.wait_rank_table("diag", timeout=60)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # the run ends: its first failing rank stops the others
        pods = client.job_pods("diag")
        if len(pods) == 8 and all(
            (p.get("status") or {}).get("phase") in ("Succeeded", "Failed") for p in pods
        ):
            break
        await asyncio.sleep(1)
    path = ("ranktable", "jobs", "default", "diag")
    plain = json.loads((await jp_fetch(*path, "layout")).body)
    assert plain["marks"] == [] and "rt-mark" not in plain["svg"]

    answer = json.loads((await jp_fetch(*path, "layout", params={"diagnosis": "true"})).body)
    Draft202012Validator(response_schema("/ranktable/jobs/{namespace}/{name}/layout", "get", 200)).validate(
        answer
    )
    diagnosis = json.loads((await jp_fetch(*path, "diagnosis")).body)
    expected = {  # each diagnosis entry's own NPU (server, device), as the marks must place it
        (diagnosis["first_failure"]["server"], diagnosis["first_failure"]["device"]): "first-failure",
        **{(s["server"], s["device"]): "straggler" for s in diagnosis["stragglers"]},
        **{(h["server"], h["device"]): "hung" for h in diagnosis["hung"]},
    }
    assert diagnosis["first_failure"]["rank"] == FIRST
    assert [s["rank"] for s in diagnosis["stragglers"]] == [SLOW] and [
        h["rank"] for h in diagnosis["hung"]
    ] == [HUNG]

    planned = json.loads((await jp_fetch(*path, "ranktable")).body)  # the platform's table: same NPUs
    assert planned["ok"]
    root = ET.fromstring(answer["svg"])
    for panel in ("given", "planned"):
        group = root.find(f".//{NS}g[@data-panel='{panel}']")
        assert group is not None
        marked: dict[tuple[str, int], str] = {}
        for server in group.iter(f"{NS}g"):
            if server.get("class") != "rt-server":
                continue
            cells = [r for r in server.iter(f"{NS}rect") if r.get("class") == "rt-npu"]
            for rect in server.iter(f"{NS}rect"):
                if rect.get("data-mark"):
                    index = [c.get("data-rank") for c in cells].index(rect.get("data-rank"))
                    marked[(server.get("data-server") or "", index)] = rect.get("data-mark") or ""
        assert marked == expected, panel  # 2 NPUs per server with device ids 0, 1 in cell order
    assert {m["kind"] for m in answer["marks"]} == {"first-failure", "straggler", "hung"}
    legend = root.find(f".//{NS}g[@class='rt-legend rt-mark-legend']")
    first_mark = next(m["rank"] for m in answer["marks"] if m["kind"] == "first-failure")
    assert legend is not None and f"first failing rank: rank {first_mark}" in "".join(legend.itertext())

    bad = await jp_fetch(*path, "layout", params={"diagnosis": "maybe"}, raise_error=False)
    assert bad.code == 400 and "diagnosis" in bad.body.decode()

    picture = tmp_path / "diagnosed.svg"  # the CLI draws the same marks: `job diagnose NAME --svg F`
    flags = ["--kubeconfig", str(pool.kubeconfig), "--context", pool.context, "--state-dir", str(tmp_path)]
    assert main(["job", "diagnose", "diag", "--svg", str(picture), "--hang-floor", "3", *flags]) == 0
    drawn = ET.fromstring(picture.read_text())
    kinds = sorted(
        r.get("data-mark") or "" for r in drawn.iter(f"{NS}rect") if r.get("class", "").startswith("rt-mark ")
    )
    assert kinds == sorted(["first-failure", "straggler", "hung"] * 2)  # both panels
