"""`POST /ranktable/logs`: diagnosis and metrics of logs sent in the request or named in the Jupyter root."""

from __future__ import annotations

import io
import json
import os
import tarfile
import uuid
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from tornado.httpclient import HTTPClientError

from tests.integration.server_helpers import extension_without_cluster
from tests.integration.test_server_api import response_schema

STEP = "2026-01-01T00:00:0{s}.000000000Z step {s} loss {loss:.1f}\n"
OOM = "2026-01-01T00:00:04.000000000Z RuntimeError: NPU out of memory. Tried to allocate 2 GiB\n"
TIMEOUT = "2026-01-01T00:01:04.000000000Z [Rank {r}] Watchdog caught collective operation timeout\n"


@pytest.fixture
def jp_server_config(tmp_path: Path) -> dict[str, Any]:
    return extension_without_cluster(tmp_path)


def run_logs() -> dict[str, bytes]:
    """A 4-rank run, one file per rank: rank 2 runs out of NPU memory first, the others time out later."""
    out = {}
    for rank in range(4):
        lines = [STEP.format(s=s, loss=3.0 - 0.1 * s) for s in (1, 2, 3)]
        lines.append(OOM if rank == 2 else TIMEOUT.format(r=rank))
        out[f"worker_{rank}.log"] = "".join(lines).encode()
    return out


def multipart(files: dict[str, bytes], **fields: str) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    parts = []
    for name, value in fields.items():
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        )
    for name, data in files.items():
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="{name}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        )
        parts.append(head.encode() + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


async def post_logs(jp_fetch: Any, body: bytes, content_type: str = "application/json") -> Any:
    response = await jp_fetch(
        "ranktable", "logs", method="POST", body=body, headers={"Content-Type": content_type}
    )
    assert response.code == 200, response.body
    return json.loads(response.body)


async def refused(jp_fetch: Any, body: bytes, content_type: str = "application/json") -> tuple[int, Any]:
    with pytest.raises(HTTPClientError) as caught:
        await jp_fetch("ranktable", "logs", method="POST", body=body, headers={"Content-Type": content_type})
    error = caught.value
    assert error.response is not None
    return error.code, json.loads(error.response.body)


def check_run(result: dict[str, Any]) -> None:
    Draft202012Validator(response_schema("/ranktable/logs", "post", 200)).validate(result)
    first = result["diagnosis"]["first_failure"]
    assert (first["rank"], first["code"]) == (2, "DEVICE_OOM")
    assert first["pod"].endswith("worker_2.log")
    assert sorted(e["rank"] for e in result["diagnosis"]["errors"]) == [0, 1, 2, 3]
    assert sorted(result["metrics"]["ranks"], key=int) == ["0", "1", "2", "3"]
    assert result["metrics"]["ranks"]["3"]["loss"] == pytest.approx([2.9, 2.8, 2.7])
    assert sorted(f["rank"] for f in result["files"]) == [0, 1, 2, 3]


async def test_multipart_upload_is_diagnosed_and_measured(jp_fetch: Any) -> None:
    body, kind = multipart(run_logs())
    check_run(await post_logs(jp_fetch, body, kind))


@pytest.mark.parametrize(
    ("extra", "field", "problem"),
    [
        (b'name="rank_from"\r\n\r\nnode-(\\d+)', "rank_from", "more than once"),
        (b'name="paths"\r\n\r\nrank_0.log', "paths", "unknown form field"),
        (b'name="files"\r\n\r\nnot a file part', "files", "must be file parts"),
    ],
)
async def test_a_form_field_twice_misplaced_or_not_a_file_is_a_400(
    jp_fetch: Any, extra: bytes, field: str, problem: str
) -> None:
    """#26, schemathesis seed 1: a second `rank_from` (or `paths` in a form) was silently dropped."""
    body, kind = multipart(run_logs(), rank_from=r"worker_(\d+)")
    boundary = kind.split("boundary=")[1].encode()
    body = b"--" + boundary + b"\r\nContent-Disposition: form-data; " + extra + b"\r\n" + body
    code, reply = await refused(jp_fetch, body, kind)
    assert code == 400 and reply["field"] == field and problem in reply["message"], reply


async def test_a_tar_export_with_its_own_rank_pattern(jp_fetch: Any) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in run_logs().items():
            info = tarfile.TarInfo("export/" + name.replace("worker_", "node-"))
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    body, kind = multipart({"job-logs.tar.gz": buffer.getvalue()}, rank_from=r"node-(\d+)")
    result = await post_logs(jp_fetch, body, kind)
    assert result["diagnosis"]["first_failure"]["pod"] == "job-logs.tar.gz:export/node-2.log"
    assert result["diagnosis"]["first_failure"]["rank"] == 2


async def test_json_body_of_files(jp_fetch: Any) -> None:
    files = [{"name": name, "text": data.decode()} for name, data in run_logs().items()]
    check_run(await post_logs(jp_fetch, json.dumps({"files": files}).encode()))


async def test_a_folder_of_the_jupyter_root(jp_fetch: Any, jp_root_dir: Path, tmp_path: Path) -> None:
    folder = jp_root_dir / "downloads" / "run-7"
    folder.mkdir(parents=True)
    for name, data in run_logs().items():
        (folder / name).write_bytes(data)
    secret = tmp_path / "outside" / "worker_9.log"
    secret.parent.mkdir()
    secret.write_text("RuntimeError: NPU out of memory\n")
    os.symlink(secret, folder / "worker_9.log")  # a symlink out of the root is not read
    result = await post_logs(jp_fetch, json.dumps({"paths": ["downloads/run-7"]}).encode())
    check_run(result)
    assert {f["name"] for f in result["files"]} == {f"downloads/run-7/worker_{r}.log" for r in range(4)}
    code, error = await refused(jp_fetch, json.dumps({"paths": ["../outside"]}).encode())
    assert code == 403 and error["field"] == "paths[0]" and "outside the Jupyter root" in error["message"]
    code, error = await refused(jp_fetch, json.dumps({"paths": ["downloads/run-7/worker_9.log"]}).encode())
    assert code == 403 and error["field"] == "paths[0]"  # the symlink itself, named directly
    code, error = await refused(jp_fetch, json.dumps({"paths": ["nope"]}).encode())
    assert code == 404 and error["field"] == "nope"


@pytest.mark.parametrize(
    ("body", "field", "words", "status"),
    [
        ({}, "files", "no log files sent", 422),
        ({"logs": []}, "logs", "unknown field", 400),
        ({"files": "x"}, "files", "must be a list", 400),
        ({"files": [{"name": "a.log"}]}, "files[0]", "name` and `text`", 400),
        ({"files": [{"name": "", "text": "x"}]}, "files[0].name", "is required", 400),
        ({"files": [{"name": "a\u0000.log", "text": "x"}]}, "files[0].name", "null byte", 400),
        ({"files": [{"name": "a.log", "text": "x"}], "rank_from": "("}, "--rank-from", "not a regular", 422),
        ({"files": [{"name": "a.log", "text": "x"}], "rank_from": 3}, "rank_from", "regular expression", 400),
        ({"files": [{"name": "a.log", "text": "x"}], "paths": ["a"]}, "paths", "not both", 422),
        ({"paths": [""]}, "paths[0]", "is empty", 400),
    ],
)
async def test_bad_input_is_one_4xx_naming_the_field(
    jp_fetch: Any, body: dict[str, Any], field: str, words: str, status: int
) -> None:
    """400: the shape openapi.yaml states; 422: what a well-formed request means (a regex, no files)."""
    code, error = await refused(jp_fetch, json.dumps(body).encode())
    assert code == status, error
    assert error["field"] == field and words in error["message"], error


async def test_limits_are_named(jp_fetch: Any, jp_root_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ranktable.usecases.log_files as log_files

    monkeypatch.setattr(log_files, "MAX_LOG_FILES", 3)
    body, kind = multipart(run_logs())
    code, error = await refused(jp_fetch, body, kind)
    assert code == 422 and "more than 3 log files" in error["message"] and "MAX_LOG_FILES" in error["message"]
    monkeypatch.setattr(log_files, "MAX_UPLOAD_BYTES", 200)
    body, kind = multipart(dict(list(run_logs().items())[:2]))
    code, error = await refused(jp_fetch, body, kind)
    assert code == 422 and "MAX_UPLOAD_BYTES" in error["message"], error
    body, kind = multipart({"a.log": b"x"}, other="1")
    code, error = await refused(jp_fetch, body, kind)
    assert code == 400 and error["field"] == "other"
    folder = jp_root_dir / "big"
    folder.mkdir()
    for name, data in run_logs().items():
        (folder / name).write_bytes(data)
    code, error = await refused(jp_fetch, json.dumps({"paths": ["big"]}).encode())  # read on the server
    assert code == 422 and "MAX_UPLOAD_BYTES" in error["message"] and error["field"].startswith("big/")

    def never_read(self: Path) -> bytes:
        raise AssertionError(f"{self} was read before its size was checked")

    monkeypatch.setattr(Path, "read_bytes", never_read)  # refused by its size alone
    code, error = await refused(jp_fetch, json.dumps({"paths": ["big/worker_0.log"]}).encode())
    assert code == 422 and "MAX_UPLOAD_BYTES" in error["message"]
    monkeypatch.undo()
    big = json.dumps({"files": [{"name": "a.log", "text": "x" * (33 * 2**20)}]}).encode()
    code, error = await refused(jp_fetch, big)
    assert code == 400 and error["field"] == "body" and "multipart" in error["fix"]
