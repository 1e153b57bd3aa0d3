"""REST: metrics, diagnosis, archived runs and their lines, against the simulated pool; runs outlive stop."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.server_helpers import call, extension_on_pool, log_lines, submit_bash
from tests.integration.test_server_api import response_schema
from tests.integration.test_server_jobs import read, until

SCRIPT = (
    'for i in 1 2 3 4 5 6; do echo "step $i loss 2.$((9 - i)) lr 1e-4"; sleep 0.2; done; '
    "echo \"python3: can't open file '/x/data.py': [Errno 2] No such file or directory\"; sleep 60"
)


@pytest.fixture
def jp_server_config(sim_pool: SimPoolHandle, tmp_path: Path) -> dict[str, Any]:
    return extension_on_pool(
        sim_pool,
        tmp_path,
        observability={"straggler_factor": 1.5},
        archive_every_seconds=0,  # what is archived here is what a follower or a stop archived
    )


async def get(jp_fetch: Any, *path: str, **params: str) -> Any:
    response = await jp_fetch(*path, params=params)
    assert response.code == 200, response.body
    return json.loads(response.body)


async def submit_obs(jp_fetch: Any, script: str, nodes: int) -> Any:
    """Submit job "obs" running `script` in bash on `nodes` pods of 8 NPUs; the submitted run."""
    return await submit_bash(jp_fetch, "obs", script, nodes)


def job_path(*rest: str) -> tuple[str, ...]:
    return ("ranktable", "jobs", "default", "obs", *rest)


def log_requests(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The pods whose log the server requests from now on, one entry per request."""
    from ranktable.cluster.kube import Kube

    requests: list[str] = []
    real_get_raw = Kube.get_raw

    def counting(self: Kube, path: str, query: list[tuple[str, Any]], timeout: tuple[float, float]) -> Any:
        if path.endswith("/log"):
            requests.append(path.split("/")[-2])
        return real_get_raw(self, path, query, timeout)

    monkeypatch.setattr(Kube, "get_raw", counting)
    return requests


def subscribe_logs(ws: Any, sub: str) -> None:
    """Subscribe the stream `ws` to job "obs"'s log lines as `sub`, as a Job view does."""
    ws.write_message(json.dumps({"op": "subscribe", "id": sub, "channel": "logs", "job": "obs"}))


@contextlib.asynccontextmanager
async def job_view(jp_fetch: Any, jp_ws_fetch: Any, script: str) -> AsyncIterator[tuple[Any, Any]]:
    """Job "obs" running `script` on 2 pods, and an open Job view: a stream subscribed to its log lines
    as "view". Yields the submitted run and the stream, closed after."""
    submitted = await submit_obs(jp_fetch, script, nodes=2)
    ws = await jp_ws_fetch("ranktable", "stream")
    try:
        subscribe_logs(ws, "view")
        yield submitted, ws
    finally:
        ws.close()


async def read_logs(ws: Any, into: dict[str, list[str]], until_steps: int, sub: str = "view") -> None:
    """Read the log lines of stream subscription `sub` into `into` (pod -> texts) until both pods have
    `until_steps`; anything but data for `sub` (an "end") fails. Other subscriptions' messages are skipped."""
    while len(into) < 2 or any(len(t) < until_steps for t in into.values()):
        msg = json.loads(await asyncio.wait_for(ws.read_message(), 60))
        if msg["id"] != sub:
            continue
        assert msg["type"] == "data", msg
        for line in log_lines(msg["data"]):
            into.setdefault(line["pod"], []).append(line["text"])


async def test_metrics_diagnosis_and_archived_runs(jp_fetch: Any, tmp_path: Path) -> None:
    submitted = await submit_obs(jp_fetch, SCRIPT, nodes=2)

    async def diagnosed() -> Any:
        result = await call(jp_fetch, *job_path("diagnosis"))
        return result if len(result["errors"]) == 2 else None

    diagnosis = await until(diagnosed, 90)
    Draft202012Validator(
        response_schema("/ranktable/jobs/{namespace}/{name}/diagnosis", "get", 200)
    ).validate(diagnosis)
    assert diagnosis["run"] == submitted["uid"] and diagnosis["source"] == "live"
    assert diagnosis["first_failure"]["code"] == "CANT_OPEN_FILE"
    assert {e["node_rank"] for e in diagnosis["errors"]} == {0, 1}

    metrics = await call(jp_fetch, *job_path("metrics"))
    Draft202012Validator(response_schema("/ranktable/jobs/{namespace}/{name}/metrics", "get", 200)).validate(
        metrics
    )
    series = next(iter(metrics["ranks"].values()))
    assert series["step"] == [1, 2, 3, 4, 5, 6] and series["loss"][0] == 2.8 and series["lr"][0] == 1e-4
    csv = await jp_fetch(*job_path("metrics"), params={"format": "csv"})
    assert csv.headers["Content-Type"].startswith("text/csv") and csv.body.decode().startswith(
        "rank,step,time,loss"
    )

    stopped = await call(jp_fetch, "ranktable", "jobs", "default", "obs", method="DELETE")
    Draft202012Validator(response_schema("/ranktable/jobs/{namespace}/{name}", "delete", 200)).validate(
        stopped
    )
    assert stopped["logs"].endswith(f"(`ranktable job logs obs --run {submitted['uid'][:8]}`)")
    runs = await call(jp_fetch, *job_path("runs"))
    Draft202012Validator(response_schema("/ranktable/jobs/{namespace}/{name}/runs", "get", 200)).validate(
        runs
    )
    assert [r["uid"] for r in runs["runs"]] == [submitted["uid"]]
    assert (tmp_path / "state" / "logs" / "default" / "obs" / submitted["uid"]).is_dir()

    # the job is gone; its run stays triageable and searchable
    again = await call(
        jp_fetch,
        *job_path("diagnosis"),
    )
    assert again["source"] == "archive" and again["first_failure"]["code"] == "CANT_OPEN_FILE"
    lines = await get(jp_fetch, *job_path("runs", submitted["uid"][:8], "logs"), errors="true")
    assert [line["text"][:31] for line in lines["lines"]] == ["python3: can't open file '/x/da"] * 2
    one = await get(jp_fetch, *job_path("runs", submitted["uid"], "logs"), node_rank="1", limit="3")
    assert len(one["lines"]) == 3 and one["truncated"] and {line["node_rank"] for line in one["lines"]} == {1}
    # the live follower stopped and the stop read on from where it was: every line archived once
    every = await get(jp_fetch, *job_path("runs", submitted["uid"], "logs"))
    steps = sorted(
        (line["node_rank"], line["text"]) for line in every["lines"] if line["text"].startswith("step")
    )
    assert steps == sorted((n, f"step {i} loss 2.{9 - i} lr 1e-4") for n in (0, 1) for i in range(1, 7))


async def test_diagnosis_polls_take_the_job_and_pods_from_the_live_job_list(
    jp_fetch: Any, jp_ws_fetch: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#8: while the job list is followed, the overview's diagnosis and metrics polls read the job and its
    pods from the list's watches, not the API (at 1,024 pods each poll's pod list cost the server ~0.5 s
    of CPU, taken from the log stream beside it)."""
    from ranktable.cluster.client import ClusterClient

    submitted = await submit_obs(jp_fetch, SCRIPT, nodes=2)
    ws = await jp_ws_fetch("ranktable", "stream")
    try:
        ws.write_message(json.dumps({"op": "subscribe", "id": "jobs", "channel": "jobs"}))
        while True:  # the list's watches hold the job and its pods
            msg = await read(ws, 60)
            rows = msg["data"]["jobs"] if msg["id"] == "jobs" and msg["type"] == "data" else []
            if any(j["name"] == "obs" and j["health"].get("total") == 2 for j in rows):
                break
        await call(jp_fetch, *job_path("diagnosis"))  # the follower starts (it reads the job once)
        reads: list[str] = []
        for method in ("get_job", "job_pods"):
            real = getattr(ClusterClient, method)

            def counting(self: ClusterClient, name: str, _real: Any = real, _method: str = method) -> Any:
                reads.append(_method)
                return _real(self, name)

            monkeypatch.setattr(ClusterClient, method, counting)

        async def diagnosed() -> Any:
            result = await call(jp_fetch, *job_path("diagnosis"))
            return result if len(result["errors"]) == 2 else None

        diagnosis = await until(diagnosed, 90)
        assert diagnosis["run"] == submitted["uid"] and diagnosis["source"] == "live"
        assert diagnosis["first_failure"]["code"] == "CANT_OPEN_FILE"
        metrics = await call(jp_fetch, *job_path("metrics"))
        assert len(metrics["ranks"]) == 2
        assert reads == []
    finally:
        ws.close()
        await call(jp_fetch, "ranktable", "jobs", "default", "obs", method="DELETE")


async def test_stop_archives_a_run_nobody_followed(jp_fetch: Any, tmp_path: Path) -> None:
    submitted = await submit_obs(jp_fetch, SCRIPT, nodes=2)

    async def printed() -> Any:  # the Describe view reads no logs: the run is not followed
        described = await call(jp_fetch, "ranktable", "jobs", "default", "obs")
        pods = described["pods"]
        return (len(pods) == 2 and all(p["phase"] == "Running" for p in pods)) or None

    await until(printed, 60)
    await asyncio.sleep(2.5)  # the script's six steps and its error line (1.2 s)
    assert not (tmp_path / "state" / "logs").exists()
    stopped = await call(jp_fetch, "ranktable", "jobs", "default", "obs", method="DELETE")
    assert stopped["deleted"] == ["job/obs", "configmap/configmap1980-obs"]
    assert stopped["logs"].startswith("14 new log lines of run "), stopped
    lines = await get(jp_fetch, *job_path("runs", submitted["uid"], "logs"), errors="true")
    assert [line["node_rank"] for line in lines["lines"]] == [0, 1]


FIXED = 'for i in 1 2 3 4 5 6 7 8; do echo "step $i loss 1.$((9 - i)) lr 1e-4"; sleep 0.1; done; sleep 60'


async def test_compare_two_runs_of_a_job(jp_fetch: Any) -> None:
    """The Job view's Compare tab: the failed run (A, stopped) beside its resubmit (B), as the schema says."""
    refused = await jp_fetch(*job_path("compare"), raise_error=False)
    assert refused.code == 404 and "no archived runs of job obs" in refused.body.decode()
    first = await submit_obs(jp_fetch, SCRIPT, nodes=1)

    async def failed() -> Any:
        return (await call(jp_fetch, *job_path("diagnosis")))["first_failure"]

    await until(failed, 90)
    alone = await jp_fetch(*job_path("compare"), raise_error=False)
    assert alone.code == 404 and "has only one run" in json.loads(alone.body)["message"]
    await call(jp_fetch, "ranktable", "jobs", "default", "obs", method="DELETE")
    second = await submit_obs(jp_fetch, FIXED, nodes=1)
    try:

        async def eight_steps() -> Any:
            compared = await call(jp_fetch, *job_path("compare"))
            return compared if compared["b"]["last_step"] == 8 else None

        compared = await until(eight_steps, 90)
        Draft202012Validator(
            response_schema("/ranktable/jobs/{namespace}/{name}/compare", "get", 200)
        ).validate(compared)
        a, b = compared["a"], compared["b"]
        assert (a["run"], b["run"]) == (first["uid"], second["uid"])
        assert a["outcome"] == "Stopped" and a["first_failure"]["code"] == "CANT_OPEN_FILE"
        assert b["first_failure"] is None and (a["last_step"], b["last_step"]) == (6, 8)
        assert compared["changes"]["loss"] == {"a": 2.3, "b": 1.1, "delta": -1.2, "ratio": 0.4783}
        assert "the failure of A (rank 0 CANT_OPEN_FILE) is gone in B" in compared["notes"]
        picked = await get(jp_fetch, *job_path("compare"), a=second["uid"][:8], b=first["uid"])
        assert (picked["a"]["run"], picked["b"]["run"]) == (second["uid"], first["uid"])
        # one run named: the other is its default (B the newest, A the run before B), as the schema says
        half = await get(jp_fetch, *job_path("compare"), a=first["uid"][:8])
        assert (half["a"]["run"], half["b"]["run"]) == (first["uid"], second["uid"])
        before = await get(jp_fetch, *job_path("compare"), b=second["uid"])
        assert (before["a"]["run"], before["b"]["run"]) == (first["uid"], second["uid"])
    finally:
        await call(jp_fetch, "ranktable", "jobs", "default", "obs", method="DELETE")


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        (("metrics",), {"format": "xml"}, "format"),
        (("runs", "nope", "logs"), {"limit": "0"}, "limit"),
        (("runs", "nope", "logs"), {"node_rank": "x"}, "node_rank"),
        (("runs", "nope", "logs"), {}, "no archived runs of job obs"),
    ],
)
async def test_bad_requests_are_4xx_naming_the_field(
    jp_fetch: Any, path: tuple[str, ...], params: dict, field: str
) -> None:
    response = await jp_fetch(*job_path(*path), params=params, raise_error=False)
    assert 400 <= response.code < 500, response.body
    assert field in response.body.decode()


CUSTOM = 'for i in 1 2 3 4; do echo "it=$i objective=3.$i"; sleep 0.1; done; sleep 60'
USER_PATTERN = r"it=(?P<step>\d+) objective=(?P<loss>[0-9.]+)"


async def test_jupyterlab_settings_add_a_metric_regex_and_override_the_server(jp_fetch: Any) -> None:
    """The Settings Editor's "observability" part, sent by the frontend: checked in full (a bad value
    changes nothing), laid over c.Ranktable.observability, and applied to a run already being read."""
    state_path = "/ranktable/observe/settings"
    before = await call(jp_fetch, "ranktable", "observe", "settings")
    Draft202012Validator(response_schema(state_path, "get", 200)).validate(before)
    assert before["settings"]["straggler_factor"] == 1.5 and before["user"] == {}  # the server config's

    job = await submit_obs(jp_fetch, CUSTOM, nodes=1)

    async def four_lines() -> Any:
        await call(jp_fetch, *job_path("metrics"))  # follows (and archives) the run
        response = await jp_fetch(*job_path("runs", job["uid"], "logs"), raise_error=False)
        return (response.code == 200 and len(json.loads(response.body)["lines"]) >= 4) or None

    await until(four_lines, 60)
    plain = await call(jp_fetch, *job_path("metrics"))
    assert all(not s.get("loss") for s in plain["ranks"].values())  # no built-in format reads these lines

    for bad, field, status in (
        ({"patterns": ["(?P<bogus>x)"]}, "settings.patterns[0]", 422),  # a regex's meaning: no schema says
        ({"straggler_factor": 0.5}, "settings.straggler_factor", 400),
        ({"colour": "red"}, "settings", 400),
        ([1], "settings", 400),
    ):
        refused = await call(
            jp_fetch, "ranktable", "observe", "settings", method="PUT", body={"settings": bad}, expect=status
        )
        assert field in json.dumps(refused)
    assert await call(jp_fetch, "ranktable", "observe", "settings") == before  # nothing changed

    user = {"patterns": [USER_PATTERN], "straggler_factor": 2.0}
    applied = await call(jp_fetch, "ranktable", "observe", "settings", method="PUT", body={"settings": user})
    Draft202012Validator(response_schema(state_path, "put", 200)).validate(applied)
    assert applied["settings"]["straggler_factor"] == 2.0 and applied["settings"]["patterns"] == [
        USER_PATTERN
    ]
    assert applied["user"] == user

    async def parsed() -> Any:
        metrics = await call(jp_fetch, *job_path("metrics"))
        series = [s for s in metrics["ranks"].values() if s.get("loss")]
        return series if series and len(series[0]["step"]) == 4 else None

    series = await until(parsed, 60)
    assert series[0]["step"] == [1, 2, 3, 4] and series[0]["loss"] == [3.1, 3.2, 3.3, 3.4]
    await call(jp_fetch, "ranktable", "jobs", "default", "obs", method="DELETE")


def test_settings_editor_schema_follows_the_server_limits() -> None:
    """schema/plugin.json's "observability" offers only settings the server knows, with its limits, and
    the OpenAPI document's ObserveSettings says the same."""
    from dataclasses import fields

    import yaml

    from ranktable.observe.parsers import MAX_PATTERN_CHARS, MAX_USER_PATTERNS
    from ranktable.observe.settings import _LIMITS, ObserveSettings

    root = Path(__file__).resolve().parents[2]
    editor = json.loads((root / "schema" / "plugin.json").read_text())["properties"]["observability"]
    api = yaml.safe_load((root / "ranktable" / "server_ext" / "openapi.yaml").read_text())
    documented = api["components"]["schemas"]["ObserveSettings"]["properties"]
    known = {f.name for f in fields(ObserveSettings)}
    assert set(documented) == known and set(editor["properties"]) <= known
    for key, (low, high) in _LIMITS.items():
        for schema in (documented[key], editor["properties"].get(key)):
            if schema is not None:
                assert (schema["minimum"], schema["maximum"]) == (low, high), key
    for schema in (documented["patterns"], editor["properties"]["patterns"]):
        assert schema["maxItems"] == MAX_USER_PATTERNS and schema["items"]["maxLength"] == MAX_PATTERN_CHARS
    assert all("default" not in p for p in editor["properties"].values())  # unset: the server's value


async def test_the_job_view_and_its_diagnosis_share_one_log_stream(
    jp_fetch: Any, jp_ws_fetch: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#8: with the Job view's logs subscribed and its overview polling the diagnosis, the pods are
    followed once (one log request per pod, not one for the view and one for `LiveRuns`); the diagnosis
    still sees every line, a late second view gets the lines so far from the archive, and the archive
    holds each line once."""
    requests = log_requests(monkeypatch)
    script = 'for i in $(seq 1 40); do echo "step $i loss 2.$((i % 10)) lr 1e-4"; sleep 0.1; done; sleep 60'
    async with job_view(jp_fetch, jp_ws_fetch, script) as (submitted, ws):
        seen: dict[str, list[str]] = {}
        await read_logs(ws, seen, 5)

        async def diagnosed() -> Any:  # what the overview tab polls
            metrics = await call(jp_fetch, *job_path("metrics"))
            series = list(metrics["ranks"].values())
            return metrics if len(series) == 2 and all(len(s["step"]) == 40 for s in series) else None

        metrics = await until(diagnosed, 60)
        diagnosis = await call(jp_fetch, *job_path("diagnosis"))
        assert diagnosis["run"] == submitted["uid"] and diagnosis["source"] == "live"
        assert all(s["step"] == list(range(1, 41)) for s in metrics["ranks"].values())
        await read_logs(ws, seen, 40)
        assert all(
            texts == [f"step {i} loss 2.{i % 10} lr 1e-4" for i in range(1, 41)] for texts in seen.values()
        )
        # one follow request per pod for the view and the diagnosis together
        assert sorted(requests) == sorted(seen), requests

        # a second view joins late: every line so far (from the archive), still no new request
        subscribe_logs(ws, "late")
        late: dict[str, list[str]] = {}
        await read_logs(ws, late, 40, "late")
        assert late == seen and len(requests) == 2
    stopped = await call(jp_fetch, "ranktable", "jobs", "default", "obs", method="DELETE")
    assert stopped["logs"]
    every = await get(jp_fetch, *job_path("runs", submitted["uid"], "logs"))
    steps = sorted((line["node_rank"], line["text"]) for line in every["lines"])
    assert steps == sorted((n, f"step {i} loss 2.{i % 10} lr 1e-4") for n in (0, 1) for i in range(1, 41))


async def test_the_overview_s_lineage_leaves_every_job_view_s_live_logs_going(
    jp_fetch: Any, jp_ws_fetch: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Overview tab reads the lineage. It used to release the run's log stream (to read the run once
    itself), which ended every open Job view's live logs ("ended" at 1,024 pods, 4,567 of 102,400
    lines/s in bench_logview). Now the live follower archives the run: the view goes on to its last
    line, with no end, and the pods are still read once."""
    requests = log_requests(monkeypatch)
    script = 'for i in $(seq 1 50); do echo "step $i loss 2.$((i % 10))"; sleep 0.1; done; sleep 60'
    async with job_view(jp_fetch, jp_ws_fetch, script) as (submitted, ws):
        seen: dict[str, list[str]] = {}
        await read_logs(ws, seen, 3)  # an "end" here is the bug
        lineage = await call(jp_fetch, *job_path("lineage"))
        assert [r["uid"] for r in lineage["runs"]] == [submitted["uid"]]
        await read_logs(ws, seen, 50)
        assert all(texts == [f"step {i} loss 2.{i % 10}" for i in range(1, 51)] for texts in seen.values())
        assert sorted(requests) == sorted(seen), requests  # the lineage read nothing of its own


async def test_the_lineage_reads_the_live_run_from_its_follower_and_an_ended_run_once(
    jp_fetch: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each Job view opened reads the lineage. It parsed every run's whole archive each time (twice: steps,
    then checkpoints): at 1,024 pods that was the server's busiest thread for the whole window. The live
    run's facts come from its follower, an ended run's archive is parsed once."""
    import ranktable.cluster.observing as observing

    parsed: list[str] = []
    real = observing.archived_observer

    def counting(root: Path, run: Any, settings: Any = None) -> Any:
        parsed.append(run.uid)
        return real(root, run, settings)

    monkeypatch.setattr(observing, "archived_observer", counting)
    script = (
        'for i in 1 2 3 4 5 6; do echo "step $i loss 2.$i"; done; '
        'echo "successfully saved checkpoint from iteration       6 to /ckpt"; sleep 60'
    )
    first = await submit_obs(jp_fetch, script, nodes=1)

    async def saved() -> Any:
        lineage = await call(jp_fetch, *job_path("lineage"))
        runs = lineage["runs"]
        return lineage if runs and runs[-1]["last_checkpoint"] == 6 and runs[-1]["last_step"] == 6 else None

    await until(saved, 60)
    assert parsed == []  # the live run: its follower's observer, no archive parsed
    again = await call(jp_fetch, *job_path("resume"), method="POST", body={}, expect=201)  # from step 6
    assert again["resumed_from"] == first["uid"] and again["checkpoint"]["step"] == 6, again
    for _ in range(2):  # two Job views opened
        lineage = await call(jp_fetch, *job_path("lineage"))
        by_uid = {r["uid"]: r for r in lineage["runs"]}
        assert by_uid[first["uid"]]["last_checkpoint"] == 6 and again["uid"] in by_uid
    assert parsed.count(first["uid"]) == 1 and again["uid"] not in parsed, parsed
