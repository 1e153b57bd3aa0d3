"""The server extension's pure endpoints, auth, error bodies and the OpenAPI document, via pytest-jupyter."""

from __future__ import annotations

import json
import random
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest
import tornado.httpclient
import yaml
from jsonschema import Draft202012Validator
from jupyter_server.serverapp import ServerApp
from jupyter_server.utils import JupyterServerAuthWarning

from ranktable.hccl import Device, RankTable, Server
from ranktable.hccl.io import rank_table_to_dict
from ranktable.server_ext.routes import ROUTES
from tests.integration.server_helpers import extension_without_cluster

DATA = Path(__file__).parents[1] / "data" / "topology"
OPENAPI = Path(__file__).parents[2] / "ranktable" / "server_ext" / "openapi.yaml"


@pytest.fixture
def jp_server_config(tmp_path: Path) -> dict[str, Any]:
    return extension_without_cluster(tmp_path)


def rank_table(server_ids: list[str], devices: int = 8) -> dict[str, Any]:
    servers = [
        Server(
            server_id=sid,
            devices=[
                Device(device_id=d, rank_id=i * devices + d, device_ip=f"10.{i}.0.{d}")
                for d in range(devices)
            ],
        )
        for i, sid in enumerate(server_ids)
    ]
    return rank_table_to_dict(RankTable(status="completed", version="1.0", servers=servers))


SERVERS = [f"192.168.0.{n}" for n in range(11, 17)]


def shuffled_servers() -> list[str]:
    order = list(SERVERS)
    random.Random(7).shuffle(order)
    return order


async def post(jp_fetch: Any, *path: str, body: Any, expect: int = 200) -> Any:
    response = await jp_fetch(*path, method="POST", body=json.dumps(body), raise_error=False)
    assert response.code == expect, response.body
    return json.loads(response.body)


def registered_patterns(web_app: Any) -> list[str]:
    """Every URL pattern tornado routes (host rules hold nested routers)."""
    out: list[str] = []

    def walk(router: Any) -> None:
        for rule in getattr(router, "rules", []):
            if hasattr(rule.target, "rules"):
                walk(rule.target)
            elif getattr(rule.matcher, "regex", None) is not None:
                out.append(rule.matcher.regex.pattern)

    walk(web_app.default_router)
    return out


# -- auth --------------------------------------------------------------------------------------------------
def test_every_route_requires_authentication(jp_environ: Any) -> None:
    """The extension template's check_auth: no handler may be reachable without authentication."""
    ServerApp.clear_instance()
    app = ServerApp(
        allow_unauthenticated_access=False,
        jpserver_extensions={"ranktable": True},
        reraise_server_extension_failures=True,
    )
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        app.initialize(argv=[], find_extensions=False, new_httpserver=False)
    try:
        problems = [str(r.message) for r in records if issubclass(r.category, JupyterServerAuthWarning)]
        assert problems == []
        patterns = registered_patterns(app.web_app)
        assert sum("/ranktable/" in p for p in patterns) == len(ROUTES)
    finally:
        ServerApp.clear_instance()


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "ranktable/config"),
        ("POST", "ranktable/plan"),
        ("POST", "ranktable/validate"),
        ("POST", "ranktable/jobs/compose"),
        ("GET", "ranktable/jobs"),
        ("DELETE", "ranktable/jobs/default/x"),
        ("GET", "ranktable/profiles"),
        ("POST", "ranktable/profiles/x/test"),
        ("POST", "ranktable/sync"),
        ("POST", "ranktable/kernels/x"),
        ("GET", "ranktable/operations/x"),
        ("GET", "ranktable/stream"),
    ],
)
async def test_unauthenticated_requests_are_refused(
    jp_serverapp: Any, http_server_client: Any, jp_base_url: str, method: str, path: str
) -> None:
    body = "{}" if method == "POST" else None
    response = await http_server_client.fetch(
        jp_base_url + path, method=method, body=body, raise_error=False, allow_nonstandard_methods=True
    )
    assert response.code == 403


async def test_unauthenticated_websocket_is_refused(
    jp_serverapp: Any, http_server_client: Any, jp_http_port: int, jp_base_url: str
) -> None:
    url = f"ws://localhost:{jp_http_port}{jp_base_url}ranktable/stream"
    with pytest.raises(tornado.httpclient.HTTPClientError) as err:
        await tornado.websocket.websocket_connect(url)
    assert err.value.code == 403


# -- pure endpoints ----------------------------------------------------------------------------------------
async def test_config_reports_flavours_and_frameworks(jp_fetch: Any) -> None:
    response = await jp_fetch("ranktable", "config")
    data = json.loads(response.body)
    assert data["namespace"] == "default"
    assert "Snt9B" in data["flavours"]
    assert {"mindspore", "pytorch"} <= set(data["frameworks"])


async def test_validate_reports_every_problem_with_its_path(jp_fetch: Any) -> None:
    good = await post(jp_fetch, "ranktable", "validate", body={"ranktable": rank_table(SERVERS[:2])})
    assert good["status"] == "valid" and good["ok"] and good["ranks"] == 16
    table = rank_table(SERVERS[:2])
    table["server_list"][1]["server_id"] = table["server_list"][0]["server_id"]
    table["server_list"][1]["device"][0]["rank_id"] = "0"
    bad = await post(jp_fetch, "ranktable", "validate", body={"ranktable": json.dumps(table)})
    assert bad["status"] == "invalid" and not bad["ok"]
    paths = " ".join(p["path"] for p in bad["problems"])
    assert "server_id" in paths and "rank_id" in paths


async def test_validate_an_initializing_table_is_not_invalid(jp_fetch: Any) -> None:
    data = await post(jp_fetch, "ranktable", "validate", body={"ranktable": {"status": "initializing"}})
    assert data["status"] == "initializing"


async def test_plan_returns_report_and_svg_with_server_details(jp_fetch: Any, jp_root_dir: Path) -> None:
    shutil.copy(DATA / "topology.yaml", jp_root_dir / "topo.yaml")
    data = await post(
        jp_fetch,
        "ranktable",
        "plan",
        body={"ranktable": rank_table(shuffled_servers()), "topology_path": "topo.yaml"},
    )
    report = data["report"]
    assert report["servers"] == 6 and report["ranks"] == 48
    # the planner's bound: tier-1 crossings equal the leaves used (3), never more than the given order
    assert report["planned"]["crossings_per_tier"][0] == 3
    assert report["planned"]["crossings_per_tier"][0] <= report["given"]["crossings_per_tier"][0]
    assert report["speedup"] >= 1.0
    assert data["svg"].lstrip().startswith("<svg") or data["svg"].lstrip().startswith("<?xml")
    assert "192.168.0.11" in data["svg"]


async def test_plan_accepts_inline_topology_text(jp_fetch: Any) -> None:
    text = (DATA / "topology.yaml").read_text()
    data = await post(
        jp_fetch, "ranktable", "plan", body={"ranktable": rank_table(SERVERS), "topology": text}
    )
    assert data["report"]["planned"]["crossings_per_tier"][0] == 3


@pytest.mark.parametrize(
    ("body", "field", "status"),
    [
        ({}, "ranktable", 400),
        ({"ranktable": 5, "topology": "x"}, "ranktable", 400),
        ({"ranktable": rank_table(SERVERS[:1]), "topology_path": "../../etc/passwd"}, "topology_path", 403),
        ({"ranktable": rank_table(SERVERS[:1]), "topology_path": "missing.yaml"}, "topology_path", 404),
        ({"ranktable": {"status": "completed"}, "topology": "x"}, "ranktable: version", 422),  # content
        ({"ranktable": rank_table(SERVERS[:1]), "topology": "x", "message_bytes": -1}, "message_bytes", 400),
    ],
)
async def test_plan_bad_input_names_the_field(
    jp_fetch: Any, body: dict[str, Any], field: str, status: int
) -> None:
    data = await post(jp_fetch, "ranktable", "plan", body=body, expect=status)
    assert set(data) >= {"message", "reason", "field"}
    assert data["field"] == field


async def test_body_that_is_not_json_is_a_400(jp_fetch: Any) -> None:
    response = await jp_fetch("ranktable", "plan", method="POST", body="{nope", raise_error=False)
    assert response.code == 400
    assert json.loads(response.body)["field"] == "body"


async def test_compose_returns_issues_next_to_fields_and_yaml(jp_fetch: Any) -> None:
    spec = {"name": "bert", "image": "bert:v1", "nodes": 4, "npus_per_node": 4, "command": ["sleep", "1"]}
    data = await post(jp_fetch, "ranktable", "jobs", "compose", body={"spec": spec})
    fields = {i["field"].removeprefix("spec.") for i in data["issues"] if i["severity"] == "error"}
    assert "npus_per_node" in fields  # multi-node jobs need exactly 8 NPUs per pod
    manifests = list(yaml.safe_load_all(data["yaml"]))
    assert [m["kind"] for m in manifests] == ["ConfigMap", "Job"]
    assert manifests[1]["spec"]["minAvailable"] == 4


async def test_compose_of_an_unreadable_spec_is_an_issue_not_a_crash(jp_fetch: Any) -> None:
    data = await post(
        jp_fetch, "ranktable", "jobs", "compose", body={"spec": {"name": "x", "image": "i", "nodes": "four"}}
    )
    assert data["yaml"] == "" and data["spec"] is None
    assert data["issues"][0]["field"] == "spec.nodes"


async def test_compose_requires_a_spec_object(jp_fetch: Any) -> None:
    data = await post(jp_fetch, "ranktable", "jobs", "compose", body={"spec": "nope"}, expect=400)
    assert data["field"] == "spec"


async def test_unknown_operation_is_a_404(jp_fetch: Any) -> None:
    response = await jp_fetch("ranktable", "operations", "sync-99", raise_error=False)
    assert response.code == 404
    assert json.loads(response.body)["field"] == "sync-99"


async def test_unexpected_errors_are_500_without_internals(jp_fetch: Any, jp_serverapp: Any) -> None:
    services = jp_serverapp.web_app.settings["ranktable_services"]

    def boom() -> None:
        raise RuntimeError("secret-token-123 leaked?")

    services.server_config = boom
    response = await jp_fetch("ranktable", "config", raise_error=False)
    assert response.code == 500
    assert b"secret-token-123" not in response.body
    assert json.loads(response.body)["reason"] == "internal"


# -- websocket -----------------------------------------------------------------------------------------------
async def test_stream_rejects_bad_messages_with_the_field(jp_ws_fetch: Any) -> None:
    ws = await jp_ws_fetch("ranktable", "stream")
    try:
        ws.write_message("not json")
        msg = json.loads(await ws.read_message())
        assert msg["type"] == "error" and msg["error"]["field"] == "message"
        ws.write_message(json.dumps({"op": "subscribe", "id": "a", "channel": "nope"}))
        msg = json.loads(await ws.read_message())
        assert msg == {"id": "a", "type": "error", "error": msg["error"]}
        assert msg["error"]["field"] == "channel"
        ws.write_message(
            json.dumps({"op": "subscribe", "id": "b", "channel": "operation", "operation": "x-1"})
        )
        msg = json.loads(await ws.read_message())
        assert msg["id"] == "b" and msg["type"] == "error" and msg["error"]["field"] == "x-1"
    finally:
        ws.close()


async def test_operation_stream_delivers_events_then_ends(jp_ws_fetch: Any, jp_serverapp: Any) -> None:
    hub = jp_serverapp.web_app.settings["ranktable_services"].hub

    def work(emit: Any, cancel: Any) -> dict[str, int]:
        for i in range(5):
            emit({"type": "progress", "files_done": i})
        return {"uploaded": 5}

    op = hub.start("sync", "test", work)
    ws = await jp_ws_fetch("ranktable", "stream")
    try:
        ws.write_message(
            json.dumps({"op": "subscribe", "id": "s", "channel": "operation", "operation": op.id})
        )
        seen = []
        while True:
            msg = json.loads(await ws.read_message())
            assert msg["id"] == "s"
            if msg["type"] == "end":
                break
            seen.append(msg["data"])
        assert [e["files_done"] for e in seen if e["type"] == "progress"] == [0, 1, 2, 3, 4]
        assert seen[-1] == {"type": "done", "result": {"uploaded": 5}, "error": None}
    finally:
        ws.close()


# -- OpenAPI -------------------------------------------------------------------------------------------------
def openapi() -> dict[str, Any]:
    return yaml.safe_load(OPENAPI.read_text())


def route_to_openapi(pattern: str) -> str:
    import re

    return re.sub(r"\(\?P<(\w+)>(\[\^/\]\+|\.\*)\)", r"{\1}", pattern)


def test_openapi_lists_exactly_the_registered_routes() -> None:
    doc = openapi()
    documented = set(doc["paths"])
    registered = {route_to_openapi(p) for p, _ in ROUTES}
    assert documented == registered
    from jupyter_server.base.handlers import JupyterHandler

    for pattern, handler in ROUTES:
        base = JupyterHandler
        path = route_to_openapi(pattern)
        methods = {
            m
            for m in ("get", "post", "patch", "delete", "put")
            if getattr(handler, m) is not getattr(base, m)
        }
        assert set(doc["paths"][path]) - {"parameters"} == methods, path


def response_schema(path: str, method: str, status: int) -> dict[str, Any]:
    doc = openapi()
    response = doc["paths"][path][method]["responses"][str(status)]
    if "$ref" in response:
        response = doc["components"]["responses"][response["$ref"].rsplit("/", 1)[-1]]
    content = response["content"]["application/json"]
    # components go along so `$ref: #/components/...` resolves against this root
    return {**content["schema"], "components": doc["components"]}


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/ranktable/validate", {"ranktable": rank_table(SERVERS[:2])}, 200),
        ("/ranktable/validate", {}, 400),
        ("/ranktable/jobs/compose", {"spec": {"name": "bert", "image": "bert:v1", "nodes": 4}}, 200),
        (
            "/ranktable/plan",
            {"ranktable": rank_table(SERVERS), "topology": (DATA / "topology.yaml").read_text()},
            200,
        ),
    ],
)
async def test_responses_validate_against_openapi(jp_fetch: Any, path: str, body: Any, status: int) -> None:
    data = await post(jp_fetch, *path.strip("/").split("/"), body=body, expect=status)
    Draft202012Validator(response_schema(path, "post", status)).validate(data)


async def test_config_response_validates_against_openapi(jp_fetch: Any) -> None:
    data = json.loads((await jp_fetch("ranktable", "config")).body)
    Draft202012Validator(response_schema("/ranktable/config", "get", 200)).validate(data)


async def test_a_large_body_gets_the_same_status_class_as_a_small_one(jp_fetch: Any) -> None:
    """A body above 256 KiB is planned in the worker process; its content error is still a 422 (#26)."""
    small = {"ranktable": {"status": "completed"}, "topology": "x"}
    large = {"ranktable": {"status": "completed", "pad": "x" * 300_000}, "topology": "x"}
    for body in (small, large):
        data = await post(jp_fetch, "ranktable", "plan", body=body, expect=422)
        assert data["field"] == "ranktable: version", data
