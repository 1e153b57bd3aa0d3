"""Bad requests are a 4xx JSON body naming the field (never a 500): deep JSON, null bytes, wrong methods."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.integration.server_helpers import extension_without_cluster


@pytest.fixture
def jp_server_config(tmp_path: Path) -> dict[str, Any]:
    return extension_without_cluster(tmp_path)


DEEP = "[" * 100_000 + "]" * 100_000
NESTED = {"a": json.loads("[" * 150 + "]" * 150)}


async def send(jp_fetch: Any, path: str, method: str = "POST", body: str | None = None) -> Any:
    return await jp_fetch(
        *path.strip("/").split("/"),
        method=method,
        body=body,
        raise_error=False,
        allow_nonstandard_methods=True,
    )


@pytest.mark.parametrize(
    "path",
    [
        "/ranktable/validate",
        "/ranktable/plan",
        "/ranktable/layout/preview",
        "/ranktable/jobs/compose",
        "/ranktable/jobs",
        "/ranktable/profiles",
        "/ranktable/sync",
        "/ranktable/run",
    ],
)
@pytest.mark.parametrize("body", [DEEP, json.dumps(NESTED)], ids=["recursion", "over-the-limit"])
async def test_deep_json_bodies_are_a_400_naming_the_limit(jp_fetch: Any, path: str, body: str) -> None:
    response = await send(jp_fetch, path, body=body)
    assert response.code == 400, response.body
    reply = json.loads(response.body)
    assert reply["field"] == "body" and "limit of 100 levels" in reply["message"]


async def test_deep_json_inside_a_field_is_a_400(jp_fetch: Any) -> None:
    response = await send(jp_fetch, "/ranktable/validate", body=json.dumps({"ranktable": DEEP}))
    assert response.code in (200, 400), response.body
    reply = json.loads(response.body)
    text = json.dumps(reply)
    assert "limit of 100 levels" in text


async def test_a_huge_integer_in_a_body_is_a_400(jp_fetch: Any) -> None:
    response = await send(jp_fetch, "/ranktable/plan", body='{"message_bytes": ' + "9" * 5000 + "}")
    assert response.code == 400
    assert "4300 digits" in json.loads(response.body)["message"]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (
            "/ranktable/plan",
            {"ranktable": {"status": "initializing"}, "topology_path": "a\0b"},
            "topology_path",
        ),
        ("/ranktable/sync", {"profile": "nb", "local_dir": "x\0y"}, "local_dir"),
        ("/ranktable/download", {"profile": "nb", "remote_path": "a", "local_path": "\0"}, "local_path"),
        ("/ranktable/profiles", {"name": "nb\0", "host": "h", "user": "u"}, "name"),
    ],
)
async def test_a_null_byte_in_a_path_field_is_a_400(
    jp_fetch: Any, path: str, body: dict[str, Any], field: str
) -> None:
    response = await send(jp_fetch, path, body=json.dumps(body))
    assert 400 <= response.code < 500, response.body
    reply = json.loads(response.body)
    assert field in (reply["field"] or "") or field in reply["message"]


@pytest.mark.parametrize(
    ("path", "method"),
    [
        ("/ranktable/profiles/nb%00x", "PATCH"),
        ("/ranktable/profiles/nb%00x", "DELETE"),
        ("/ranktable/profiles/nb%00x/test", "POST"),
        ("/ranktable/kernels/nb%00x", "POST"),
        ("/ranktable/operations/x%00y", "GET"),
        ("/ranktable/jobs/default/x%00y", "GET"),
        ("/ranktable/jobs/de%00fault/x/layout", "GET"),
    ],
)
async def test_a_null_byte_in_a_url_is_a_4xx_json(jp_fetch: Any, path: str, method: str) -> None:
    body = "{}" if method in ("POST", "PATCH") else None
    response = await send(jp_fetch, path, method=method, body=body)
    assert 400 <= response.code < 500, response.body
    assert "message" in json.loads(response.body)


async def test_a_file_name_longer_than_the_file_system_allows_is_a_404(jp_fetch: Any) -> None:
    """Found by the OpenAPI fuzzer: stat() of a 300-byte name raised ENAMETOOLONG, and the server said 500;
    no such file can exist, so 404 naming the field (c142469; docs/security.md's status classes)."""
    params = {"topology_path": "t" * 300}
    response = await jp_fetch("ranktable", "jobs", "default", "x", "layout", params=params, raise_error=False)
    assert response.code == 404, response.body
    reply = json.loads(response.body)
    assert reply["field"] == "topology_path" and "File name too long" in reply["message"]
    body = json.dumps({"ranktable": {"status": "initializing"}, "topology_path": "t" * 300})
    response = await send(jp_fetch, "/ranktable/plan", body=body)
    assert response.code == 404, response.body
    assert json.loads(response.body)["field"] == "topology_path"


async def test_a_home_folder_of_an_unknown_user_is_a_403(jp_fetch: Any) -> None:
    """Found by the OpenAPI fuzzer: `~ý` made pathlib's expanduser raise RuntimeError, and the server said
    500. A home folder is outside the Jupyter root: 403, as any path there."""
    params = {"topology_path": "~\u00fd"}
    response = await jp_fetch("ranktable", "jobs", "default", "x", "layout", params=params, raise_error=False)
    assert response.code == 403, response.body
    reply = json.loads(response.body)
    assert reply["field"] == "topology_path" and "unknown user" in reply["message"]


async def test_a_null_byte_in_a_query_argument_is_a_400(jp_fetch: Any) -> None:
    response = await jp_fetch("ranktable", "jobs", params={"namespace": "a\0b"}, raise_error=False)
    assert response.code == 400
    assert json.loads(response.body)["field"] == "namespace"


@pytest.mark.parametrize(
    ("path", "method", "allowed"),
    [
        ("/ranktable/config", "POST", "GET"),
        ("/ranktable/plan", "GET", "POST"),
        ("/ranktable/jobs", "PUT", "GET, POST"),
        ("/ranktable/profiles/nb", "GET", "PATCH, DELETE"),
        ("/ranktable/operations/x", "POST", "GET, DELETE"),
    ],
)
async def test_a_405_names_the_allowed_methods(jp_fetch: Any, path: str, method: str, allowed: str) -> None:
    body = "{}" if method in ("POST", "PUT", "PATCH") else None
    response = await send(jp_fetch, path, method=method, body=body)
    assert response.code == 405
    assert response.headers["Allow"] == allowed
    assert json.loads(response.body)["message"]


async def test_the_stream_refuses_deep_messages_with_an_error(jp_ws_fetch: Any) -> None:
    ws = await jp_ws_fetch("ranktable", "stream")
    try:
        ws.write_message(DEEP)
        reply = json.loads(await ws.read_message())
        assert reply["type"] == "error" and "limit of 100 levels" in reply["error"]["message"]
        ws.write_message(json.dumps({"op": "subscribe", "id": "a", "channel": "operation", "operation": "x"}))
        assert json.loads(await ws.read_message())["id"] == "a"  # the connection is still usable
    finally:
        ws.close()


async def test_a_body_over_the_size_limit_is_a_400_naming_it(
    jp_fetch: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ranktable.limits

    monkeypatch.setattr(ranktable.limits, "MAX_FILE_BYTES", 1024)
    body = json.dumps({"ranktable": {"status": "initializing", "pad": "x" * 2000}})
    response = await send(jp_fetch, "/ranktable/validate", body=body)
    assert response.code == 400
    reply = json.loads(response.body)
    assert reply["field"] == "body" and "1,024 bytes limit" in reply["message"]


@pytest.mark.parametrize("path", ["/ranktable/validate", "/ranktable/plan"])
@pytest.mark.parametrize(
    "body",
    ['{"ranktable": "\\ud800"}', '{"ranktable": {"server_list": [{"server_id": "a\\udfff"}]}}'],
    ids=["value", "nested"],
)
async def test_a_lone_surrogate_is_a_400_naming_the_field(jp_fetch: Any, path: str, body: str) -> None:
    """#26.10: it was a 500 (the string could not be encoded further on)."""
    response = await send(jp_fetch, path, body=body)
    assert response.code == 400, response.body
    reply = json.loads(response.body)
    assert reply["field"].startswith("ranktable") and "lone surrogate" in reply["message"]


@pytest.mark.parametrize("since", [{"job-0": "yesterday"}, {"job-0": 5}, {"job-0": None}])
async def test_a_bad_since_on_the_stream_is_an_error_naming_it(jp_ws_fetch: Any, since: Any) -> None:
    """#26.10: it was an "internal" error."""
    ws = await jp_ws_fetch("ranktable", "stream")
    try:
        message = {"op": "subscribe", "id": "l", "channel": "logs", "job": "job", "since": since}
        ws.write_message(json.dumps(message))
        reply = json.loads(await ws.read_message())
        assert reply["type"] == "error", reply
        error = reply["error"]
        assert error["field"] == "since.job-0" and "RFC 3339" in error["message"], error
    finally:
        ws.close()


@pytest.mark.parametrize("value", [5, ["a"], {"a": 1}, True])
async def test_local_dir_must_be_a_string(jp_fetch: Any, value: Any) -> None:
    """#26.10: `local_dir: 5` was taken as the folder "5"."""
    body = json.dumps({"profile": "box", "local_dir": value})
    response = await send(jp_fetch, "/ranktable/sync", body=body)
    assert response.code == 400, response.body
    reply = json.loads(response.body)
    assert reply["field"] == "local_dir" and "must be a string" in reply["message"]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/ranktable/profiles/box/test", {"passphrase": 5}, "passphrase"),
        ("/ranktable/download", {"profile": "box", "remote_path": "a", "local_path": 7}, "local_path"),
        ("/ranktable/profiles", {"name": "box", "host": "h", "key_file": "k" * 1025}, "key_file"),
    ],
)
async def test_a_text_field_of_another_type_or_too_long_is_a_400_naming_it(
    jp_fetch: Any, path: str, body: dict[str, Any], field: str
) -> None:
    """#26: schemathesis seed 7: `passphrase: 5` was tried as "5", `local_path: 7` became the file "7"."""
    response = await send(jp_fetch, path, body=json.dumps(body))
    assert response.code == 400, response.body
    reply = json.loads(response.body)
    assert reply["field"] == field and (
        "must be a string" in reply["message"] or "limit 1024" in reply["message"]
    )


async def test_subscriptions_are_capped_per_socket_and_per_user(
    jp_ws_fetch: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#26.1: one socket (or one user's sockets) may not follow without bound."""
    from ranktable import limits
    from ranktable.server_ext.stream import StreamHandler

    monkeypatch.setattr(limits, "MAX_SUBSCRIPTIONS_PER_SOCKET", 3)
    monkeypatch.setattr(limits, "MAX_SUBSCRIPTIONS_PER_USER", 5)
    # the test server's token makes a new anonymous user per request: both sockets are one user here
    monkeypatch.setattr(StreamHandler, "_user_key", lambda self: "alice")
    first, second = await jp_ws_fetch("ranktable", "stream"), await jp_ws_fetch("ranktable", "stream")

    async def subscribe(ws: Any, sub_id: str) -> dict[str, Any] | None:
        """The refusal of subscription `sub_id`, or None when it is active (only data for 0.5 s)."""
        ws.write_message(json.dumps({"op": "subscribe", "id": sub_id, "channel": "uploads"}))
        while True:
            try:
                msg = json.loads(await asyncio.wait_for(ws.read_message(), 0.5))
            except TimeoutError:
                return None
            if msg["id"] == sub_id and msg["type"] == "error":
                return msg

    try:
        for n in range(3):
            assert await subscribe(first, f"a{n}") is None
        refused = await subscribe(first, "a3")
        assert refused is not None and "3 active subscriptions (the limit)" in refused["error"]["message"]
        for n in range(2):
            assert await subscribe(second, f"b{n}") is None
        refused = await subscribe(second, "b2")  # 5 across the user's two sockets
        assert refused is not None and "5 active subscriptions" in refused["error"]["message"]
        first.write_message(json.dumps({"op": "unsubscribe", "id": "a0"}))
        await asyncio.sleep(0.2)
        assert await subscribe(second, "b3") is None  # a slot came free
    finally:
        first.close()
        second.close()


async def test_the_stream_refuses_a_plain_request_and_an_undeclared_method_in_json(jp_fetch: Any) -> None:
    """Found by schemathesis (#26): `/stream` answered a plain GET with tornado's text 400, and a method it
    has not with a 405 without `Allow`."""
    plain = await jp_fetch("ranktable", "stream", raise_error=False)
    assert plain.code == 400 and json.loads(plain.body)["field"] == "Upgrade"
    wrong = await jp_fetch("ranktable", "stream", method="PUT", body="{}", raise_error=False)
    assert wrong.code == 405 and wrong.headers["Allow"] == "GET"
    assert json.loads(wrong.body)["reason"] == "Method Not Allowed"


def test_what_is_not_ready_yet_is_a_409_to_ask_again() -> None:
    """A rank table still initializing (`NotReady`) is a 409 with its fix: the Job view's Layout tab asks
    again on a 409 and shows any other error once."""
    from ranktable.errors import NotReady
    from ranktable.server_ext.errors import body_for, status_for

    error = NotReady("the rank table of bert is still initializing", where="rt-bert", fix="wait")
    assert status_for(error) == 409
    assert body_for(error)["fix"] == "wait" and body_for(error)["field"] == "rt-bert"
