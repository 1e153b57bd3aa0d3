"""A job's Volcano networkTopology as the JobSpec field `network_topology` (MODE:TIER): composed into the
Volcano Job, read back, and refused with the field named when malformed."""

from __future__ import annotations

import pytest

from ranktable.compose.manifests import compose, spec_from_manifests
from ranktable.compose.spec import JobSpec
from ranktable.errors import InputError

BASE = {"name": "nt", "image": "img", "nodes": 2, "npus_per_node": 8, "command": ["python3", "train.py"]}


def test_composed_into_the_volcano_job_and_read_back() -> None:
    spec = JobSpec.from_dict({**BASE, "network_topology": "hard:1"})
    job = next(d for d in compose(spec) if d["kind"] == "Job")
    assert job["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 1}
    assert spec_from_manifests(compose(spec)).network_topology == "hard:1"
    plain = next(d for d in compose(JobSpec.from_dict(BASE)) if d["kind"] == "Job")
    assert "networkTopology" not in plain["spec"]


@pytest.mark.parametrize("bad", ["hard", "medium:1", "soft:0", "hard:x", "hard:10", 3])
def test_a_malformed_value_names_the_field_and_the_form(bad: object) -> None:
    with pytest.raises(InputError) as caught:
        JobSpec.from_dict({**BASE, "network_topology": bad})
    assert caught.value.where == "spec.network_topology"
    assert isinstance(bad, int) or "hard:1" in (caught.value.fix or "")  # a number: the reader's type error


def test_a_volcano_job_naming_a_tier_by_name_is_refused_on_read_back() -> None:
    docs = compose(JobSpec.from_dict(BASE))
    job = next(d for d in docs if d["kind"] == "Job")
    job["spec"]["networkTopology"] = {"mode": "hard", "highestTierName": "leaf"}
    with pytest.raises(InputError) as caught:
        spec_from_manifests(docs)
    assert caught.value.where == "Job.spec.networkTopology.highestTierName"
