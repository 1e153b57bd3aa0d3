"""#26.7: a large request body is parsed and validated off the event loop (in the body worker process):
the server keeps answering meanwhile. Before, a 62 MB body stalled `/api/status` for 12 s."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.server_helpers import extension_without_cluster


@pytest.fixture
def jp_server_config(tmp_path: Path) -> dict[str, Any]:
    return extension_without_cluster(tmp_path)


def _rank_table(servers: int) -> dict[str, Any]:
    """A valid rank table 1.0 of `servers` x 16 NPUs (~1 KiB a server)."""
    server_list = []
    for s in range(servers):
        hi, lo = s // 256, s % 256
        devices = [
            {"device_id": str(d), "device_ip": f"172.{hi}.{lo}.{d + 1}", "rank_id": str(s * 16 + d)}
            for d in range(16)
        ]
        server_list.append(
            {"server_id": f"10.0.{hi}.{lo}", "container_ip": f"10.0.{hi}.{lo}", "device": devices}
        )
    return {"status": "completed", "version": "1.0", "server_count": str(servers), "server_list": server_list}


async def _status_latencies(jp_fetch: Any, until: Any) -> list[float]:
    latencies = []
    while not until():
        started = time.perf_counter()
        status = await jp_fetch("api", "status")
        latencies.append(time.perf_counter() - started)
        assert status.code == 200
        await asyncio.sleep(0.05)
    return latencies


async def test_status_answers_in_100_ms_and_never_stalls_while_a_60_mb_body_is_validated(
    jp_fetch: Any, jp_http_port: int, jp_base_url: str, jp_auth_header: dict[str, str], tmp_path: Path
) -> None:
    body = tmp_path / "body.json"
    body.write_text(json.dumps({"ranktable": _rank_table(50_000)}))
    assert body.stat().st_size >= 60 * 10**6
    deadline = time.monotonic() + 2
    idle = await _status_latencies(jp_fetch, lambda: time.monotonic() > deadline)
    # The client is another process (curl), so only the server's own work shares this event loop.
    headers = [f"{k}: {v}" for k, v in jp_auth_header.items()]
    curl = await asyncio.create_subprocess_exec(
        "curl",
        "-s",
        "-o",
        str(tmp_path / "reply.json"),
        "-w",
        "%{http_code}",
        "--data-binary",
        f"@{body}",
        *(arg for h in headers for arg in ("-H", h)),
        "-H",
        "Content-Type: application/json",
        f"http://127.0.0.1:{jp_http_port}{jp_base_url}ranktable/validate",
        stdout=asyncio.subprocess.PIPE,
    )
    done = asyncio.ensure_future(curl.communicate())
    busy = await _status_latencies(jp_fetch, done.done)
    out, _ = await done
    assert out == b"200", (tmp_path / "reply.json").read_text()[:500]
    report = json.loads((tmp_path / "reply.json").read_text())
    assert report["ok"] and report["servers"] == 50_000, report["summary"]
    assert len(busy) >= 10, busy  # the validation took a while: /api/status was asked meanwhile
    print(
        f"idle max {max(idle) * 1000:.0f} ms, while validating: max {max(busy) * 1000:.0f} ms of {len(busy)}"
    )
    # 95% of the answers within 100 ms, none near a parse's stall (json.loads of this body alone holds the
    # loop 3.6 s here): the shared machine (load ~20 on 2 cores) delays any process now and then (the idle
    # baseline's own max was 45-103 ms), so a single sample is not held to 100 ms.
    slow = [(i, round(t, 3)) for i, t in enumerate(busy) if t >= 0.1]
    assert len(slow) <= len(busy) // 20 and max(busy) < 1.0, slow


async def test_a_large_body_with_an_error_is_the_same_400(jp_fetch: Any) -> None:
    """Errors found in the worker come back as the same 4xx body naming the field."""
    body = json.dumps({"ranktable": 5, "pad": "y" * 300_000})
    response = await jp_fetch("ranktable", "validate", method="POST", body=body, raise_error=False)
    reply = json.loads(response.body)
    assert response.code == 400 and reply["field"] == "ranktable" and "JSON object" in reply["message"]
    body = json.dumps({"ranktable_path": "nothing-here.json", "pad": "y" * 300_000})
    response = await jp_fetch("ranktable", "plan", method="POST", body=body, raise_error=False)
    assert response.code == 404 and json.loads(response.body)["field"] == "ranktable_path"
    surrogate = body[:-2] + '\\ud800"}'  # a lone surrogate in a large body: a 400 too, never a 500
    response = await jp_fetch("ranktable", "validate", method="POST", body=surrogate, raise_error=False)
    assert response.code == 400 and "surrogate" in json.loads(response.body)["message"]


async def test_other_requests_refuse_a_body_over_their_limit(jp_fetch: Any) -> None:
    body = json.dumps({"spec": {"name": "x" * (3 * 2**20)}})
    response = await jp_fetch("ranktable", "jobs", "compose", method="POST", body=body, raise_error=False)
    reply = json.loads(response.body)
    assert response.code == 400 and reply["field"] == "body" and "2 MiB limit" in reply["message"]
