"""null is refused exactly where the JobSpec schema says the type is not nullable (schemathesis found a
`shared.volume.path: null` accepted, #26.9): the reader and the schema must agree for every field."""

from __future__ import annotations

from typing import Any

import pytest

from ranktable.compose.spec import JobSpec
from ranktable.compose.spec_schema import job_spec_schema
from ranktable.compose.storage import SharedStorage
from ranktable.errors import InputError

SCHEMA = job_spec_schema()
MINIMAL = {"name": "bert", "image": "train:v1"}


def nullable(prop: dict[str, Any]) -> bool:
    kinds = prop.get("type")
    return (isinstance(kinds, list) and "null" in kinds) or any(
        alt.get("type") == "null" for alt in prop.get("anyOf", [])
    )


def optional_fields(record: dict[str, Any]) -> list[tuple[str, bool]]:
    required = set(record["required"])
    return [(name, nullable(p)) for name, p in record["properties"].items() if name not in required]


@pytest.mark.parametrize(("field", "allows_null"), optional_fields(SCHEMA))
def test_a_top_level_null_is_read_as_the_schema_says(field: str, allows_null: bool) -> None:
    if allows_null:
        assert getattr(JobSpec.from_dict({**MINIMAL, field: None}), field) == getattr(
            JobSpec.from_dict(MINIMAL), field
        )
    else:
        with pytest.raises(InputError) as caught:
            JobSpec.from_dict({**MINIMAL, field: None})
        assert (caught.value.where, caught.value.reason) == (f"spec.{field}", "must not be null")


@pytest.mark.parametrize(("field", "allows_null"), optional_fields(SCHEMA["$defs"]["VolumeSpec"]))
def test_a_null_in_a_volume_is_read_as_the_schema_says(field: str, allows_null: bool) -> None:
    volume = {"name": "sfs", "kind": "nfs", "mount_path": "/mnt/sfs", "server": "10.0.0.9", "path": "/"}
    data = {"instance_path": "/data", "volume": {**volume, field: None}}
    if allows_null:
        SharedStorage.from_json(data)
        return
    with pytest.raises(InputError) as caught:
        SharedStorage.from_json(data)
    assert caught.value.where == f"shared.volume.{field}"


def test_an_absent_or_empty_field_is_still_the_default() -> None:
    assert JobSpec.from_dict({**MINIMAL, "cpu": ""}) == JobSpec.from_dict(MINIMAL)
    assert (
        SharedStorage.from_json(
            {
                "instance_path": "/d",
                "volume": {"name": "s", "kind": "hostPath", "mount_path": "/d", "path": "/d"},
            }
        ).volume.claim
        == ""
    )
