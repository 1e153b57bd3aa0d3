"""Authorization: every handler asks the server's Authorizer, with the right resource and action."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
import tornado.httpclient
import yaml
from jupyter_server.auth.authorizer import Authorizer

from ranktable.server_ext.routes import ROUTES
from tests.integration.server_helpers import call, extension_without_cluster

OPENAPI = Path(__file__).parents[2] / "ranktable" / "server_ext" / "openapi.yaml"


class ReadOnlyAuthorizer(Authorizer):
    """Allows `read` on anything, nothing else; records every question it was asked."""

    asked: ClassVar[list[tuple[str, str, str]]] = []

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        self.asked.append((handler.request.path, action, resource))
        return action == "read"


class DenyAllAuthorizer(Authorizer):
    asked: ClassVar[list[tuple[str, str, str]]] = []

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        self.asked.append((handler.request.path, action, resource))
        return False


@pytest.fixture
def authorizer(request: Any) -> type[Authorizer]:
    return getattr(request, "param", ReadOnlyAuthorizer)


@pytest.fixture
def jp_server_config(tmp_path: Path, authorizer: type[Authorizer]) -> dict[str, Any]:
    authorizer.asked.clear()  # type: ignore[attr-defined]
    return extension_without_cluster(tmp_path, authorizer_class=authorizer)


def documented_operations() -> list[tuple[str, str]]:
    """(method, concrete path) for every operation the OpenAPI document lists (path parameters filled)."""
    doc = yaml.safe_load(OPENAPI.read_text())
    out = []
    for path, item in doc["paths"].items():
        concrete = path.replace("{namespace}", "default").replace("{name}", "x")
        concrete = concrete.replace("{profile}", "x").replace("{operation}", "sync-1")
        concrete = concrete.replace("{forward}", "x").replace("{kernel_id}", "x").replace("{run}", "x")
        concrete = concrete.replace("{path}", "x")
        for method in item:
            if method != "parameters":
                out.append((method.upper(), concrete))
    return out


# what each operation needs; anything that changes state, runs a command or installs a kernel is not a read
EXPECTED = {
    ("GET", "/ranktable/config"): ("read", "ranktable"),
    ("POST", "/ranktable/validate"): ("read", "ranktable"),
    ("POST", "/ranktable/plan"): ("read", "ranktable"),
    ("POST", "/ranktable/layout/preview"): ("read", "ranktable"),
    ("POST", "/ranktable/jobs/compose"): ("read", "ranktable"),
    ("GET", "/ranktable/jobs"): ("read", "ranktable"),
    ("POST", "/ranktable/jobs"): ("write", "ranktable"),
    ("GET", "/ranktable/permissions"): ("read", "ranktable"),
    ("GET", "/ranktable/team"): ("read", "ranktable"),
    ("GET", "/ranktable/jobs/default/x"): ("read", "ranktable"),
    ("DELETE", "/ranktable/jobs/default/x"): ("write", "ranktable"),
    ("GET", "/ranktable/jobs/default/x/layout"): ("read", "ranktable"),
    ("GET", "/ranktable/jobs/default/x/ranktable"): ("read", "ranktable"),
    ("POST", "/ranktable/jobs/default/x/resubmit"): ("write", "ranktable"),
    ("POST", "/ranktable/jobs/default/x/resume"): ("write", "ranktable"),
    ("GET", "/ranktable/jobs/default/x/lineage"): ("read", "ranktable"),
    ("GET", "/ranktable/recovery"): ("read", "ranktable"),
    ("GET", "/ranktable/jobs/default/x/metrics"): ("read", "ranktable"),
    ("GET", "/ranktable/jobs/default/x/diagnosis"): ("read", "ranktable"),
    ("GET", "/ranktable/jobs/default/x/compare"): ("read", "ranktable"),
    ("GET", "/ranktable/jobs/default/x/runs"): ("read", "ranktable"),
    ("GET", "/ranktable/jobs/default/x/runs/x/logs"): ("read", "ranktable"),
    ("POST", "/ranktable/logs"): ("read", "ranktable"),
    ("GET", "/ranktable/observe/settings"): ("read", "ranktable"),
    ("PUT", "/ranktable/observe/settings"): ("write", "ranktable"),
    ("GET", "/ranktable/profiles"): ("read", "ranktable"),
    ("POST", "/ranktable/profiles"): ("write", "ranktable"),
    ("PATCH", "/ranktable/profiles/x"): ("write", "ranktable"),
    ("DELETE", "/ranktable/profiles/x"): ("write", "ranktable"),
    ("POST", "/ranktable/profiles/x/test"): ("write", "ranktable"),
    ("POST", "/ranktable/kernels/x"): ("write", "kernelspecs"),
    ("GET", "/ranktable/remote-kernels"): ("read", "kernels"),
    ("DELETE", "/ranktable/remote-kernels/x"): ("write", "kernels"),
    ("POST", "/ranktable/remote-kernels/x/attach"): ("write", "kernels"),
    ("GET", "/ranktable/forwards"): ("read", "ranktable"),
    ("POST", "/ranktable/forwards"): ("execute", "ranktable"),
    ("DELETE", "/ranktable/forwards/x"): ("write", "ranktable"),
    # the forwarded app: each method as opening the forward (a tunnel to the instance's network)
    **{(m, "/ranktable/forwards/x/proxy/x"): ("execute", "ranktable") for m in ("GET", "POST", "PUT")},
    ("PATCH", "/ranktable/forwards/x/proxy/x"): ("execute", "ranktable"),
    ("DELETE", "/ranktable/forwards/x/proxy/x"): ("execute", "ranktable"),
    ("POST", "/ranktable/sync"): ("write", "ranktable"),
    ("POST", "/ranktable/download"): ("write", "contents"),
    ("POST", "/ranktable/run"): ("execute", "ranktable"),
    ("GET", "/ranktable/operations/sync-1"): ("read", "ranktable"),
    ("DELETE", "/ranktable/operations/sync-1"): ("write", "ranktable"),
    ("GET", "/ranktable/stream"): ("read", "ranktable"),
}


def test_the_expected_table_covers_every_documented_operation() -> None:
    assert set(documented_operations()) == set(EXPECTED)
    assert len({p for _, p in EXPECTED}) == len(ROUTES)


@pytest.mark.parametrize("authorizer", [DenyAllAuthorizer], indirect=True)
@pytest.mark.parametrize(("method", "path"), sorted(k for k in EXPECTED if k[1] != "/ranktable/stream"))
async def test_every_operation_asks_the_authorizer_and_obeys_a_refusal(
    jp_fetch: Any, method: str, path: str
) -> None:
    body = "{}" if method in ("POST", "PATCH", "PUT") else None
    response = await jp_fetch(*path.strip("/").split("/"), method=method, body=body, raise_error=False)
    assert response.code == 403, response.body
    reply = json.loads(response.body)
    assert "not authorized" in reply["message"]
    asked = [(a, r) for p, a, r in DenyAllAuthorizer.asked if p.endswith(path)]
    assert asked == [EXPECTED[(method, path)]]


async def test_a_read_only_user_can_plan_and_list_but_not_create_run_or_install(
    jp_fetch: Any, jp_root_dir: Path
) -> None:
    config = await call(jp_fetch, "ranktable", "config")
    assert "Snt9B" in config["flavours"]
    assert (await call(jp_fetch, "ranktable", "profiles"))["profiles"] == []
    validated = await call(
        jp_fetch, "ranktable", "validate", method="POST", body={"ranktable": {"status": "initializing"}}
    )
    assert validated["status"] == "initializing"
    spec = {"name": "bert", "image": "bert:v1", "nodes": 4, "command": ["sleep", "1"]}
    composed = await call(jp_fetch, "ranktable", "jobs", "compose", method="POST", body={"spec": spec})
    assert "Job" in composed["yaml"]

    profile = {"name": "nb", "host": "127.0.0.1", "port": 22, "user": "ma-user"}
    await call(jp_fetch, "ranktable", "profiles", method="POST", body=profile, expect=403)
    assert (await call(jp_fetch, "ranktable", "profiles"))["profiles"] == []  # nothing was stored
    await call(
        jp_fetch, "ranktable", "run", method="POST", body={"profile": "nb", "command": "id"}, expect=403
    )
    await call(jp_fetch, "ranktable", "kernels", "nb", method="POST", body={}, expect=403)
    await call(jp_fetch, "ranktable", "sync", method="POST", body={"profile": "nb"}, expect=403)
    await call(
        jp_fetch,
        "ranktable",
        "download",
        method="POST",
        body={"profile": "nb", "remote_path": "a"},
        expect=403,
    )
    await call(jp_fetch, "ranktable", "jobs", method="POST", body={"spec": spec}, expect=403)
    assert not list(jp_root_dir.iterdir())


async def test_a_read_only_user_can_follow_the_stream(jp_ws_fetch: Any) -> None:
    ws = await jp_ws_fetch("ranktable", "stream")
    try:
        ws.write_message(json.dumps({"op": "subscribe", "id": "a", "channel": "operation", "operation": "x"}))
        msg = json.loads(await ws.read_message())
        assert msg["id"] == "a" and msg["error"]["field"] == "x"  # reached the handler: a 404-like error
    finally:
        ws.close()
    assert ("/ranktable/stream", "read", "ranktable") in [
        (p[-len("/ranktable/stream") :], a, r) for p, a, r in ReadOnlyAuthorizer.asked
    ]


@pytest.mark.parametrize("authorizer", [DenyAllAuthorizer], indirect=True)
async def test_the_stream_is_refused_without_read_permission(jp_ws_fetch: Any) -> None:
    with pytest.raises(tornado.httpclient.HTTPClientError) as err:
        await jp_ws_fetch("ranktable", "stream")
    assert err.value.code == 403
    assert [(a, r) for p, a, r in DenyAllAuthorizer.asked if p.endswith("/ranktable/stream")] == [
        ("read", "ranktable")
    ]


class RanktableReadOnlyAuthorizer(Authorizer):
    """`ranktable:read` and nothing else: not `contents:read` (may not read the Jupyter root's files)."""

    asked: ClassVar[list[tuple[str, str, str]]] = []

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        return action == "read" and resource == "ranktable"


@pytest.mark.parametrize("authorizer", [RanktableReadOnlyAuthorizer], indirect=True)
@pytest.mark.parametrize(
    ("path", "field"),
    [(("ranktable", "plan"), "ranktable_path"), (("ranktable", "validate"), "ranktable_path")],
)
async def test_a_user_who_may_not_read_files_learns_nothing_of_them(
    jp_fetch: Any, jp_root_dir: Path, path: tuple[str, ...], field: str
) -> None:
    """#26.10: /plan errors echoed a file's key names and its absolute path to such a user."""
    (jp_root_dir / "notes.json").write_text(json.dumps({"aws_secret_access_key_name": {"x": 1}}))
    for name in ("notes.json", "missing.json"):  # and whether a file exists is not told either
        reply = await call(jp_fetch, *path, method="POST", body={field: name}, expect=403)
        text = json.dumps(reply)
        assert "aws_secret" not in text and str(jp_root_dir) not in text and "missing" not in text
        assert reply["field"] == field and "contents:read" in reply["message"]
    table = {"status": "completed", "version": "1.0", "server_count": "1", "server_list": []}
    inline = await call(jp_fetch, "ranktable", "validate", method="POST", body={"ranktable": table})
    assert "status" in inline  # content sent inline is still checked
