"""The sync and download operations' `done` results are what openapi.yaml declares: the panel's types."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from ranktable.remote.sync.syncer import Conflict, SyncResult
from ranktable.usecases.remote import sync_result_json

OPENAPI = Path(__file__).parents[2] / "ranktable" / "server_ext" / "openapi.yaml"
SCHEMAS = yaml.safe_load(OPENAPI.read_text())["components"]["schemas"]


def errors(name: str, value: Any) -> list[str]:
    return [e.message for e in Draft202012Validator(SCHEMAS[name]).iter_errors(value)]


def test_a_sync_result_matches_its_schema() -> None:
    conflict = Conflict("b.py", "changed remotely")
    result = SyncResult(uploaded=["a.py"], conflicts=[conflict], unchanged=3, bytes=10)
    assert errors("SyncResult", sync_result_json(result)) == []


@pytest.mark.parametrize(
    ("value", "fails"),
    [
        ({"files": 2, "local_path": "out"}, False),
        ({"files": "2", "local_path": "out"}, True),
        ({"files": 1}, True),
    ],
)
def test_the_download_schema_tells_a_bad_result(value: dict[str, Any], fails: bool) -> None:
    assert bool(errors("DownloadResult", value)) == fails


def test_the_sync_schema_tells_a_missing_count() -> None:
    value = sync_result_json(SyncResult())
    del value["uploaded"]
    assert errors("SyncResult", value) == ["'uploaded' is a required property"]
