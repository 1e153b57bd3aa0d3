"""`ranktable.widgets.JobComposer`: messages next to fields as values change, the YAML, and Submit."""

from __future__ import annotations

import yaml

from ranktable.widgets import JobComposer
from tests.integration.fixtures.simpool import SimPoolHandle


def test_messages_follow_the_fields_as_you_type() -> None:
    form = JobComposer()
    assert form.submit_button.disabled
    assert "required" in form.messages["name"].value  # empty name: from_dict names the field
    form.name.value = "bert"
    form.image.value = "bert:v1"
    form.command.value = "python train.py"
    assert not form.submit_button.disabled
    docs = list(yaml.safe_load_all(form.manifests))
    assert docs[1]["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["command"] == [
        "/bin/bash",
        "-c",
        "python train.py",
    ]
    form.nodes.value = 4
    form.npus_per_node.value = 4
    assert "error" in form.messages["npus_per_node"].value
    assert form.submit_button.disabled
    form.npus_per_node.value = 8
    assert form.messages["npus_per_node"].value == ""
    form.env.value = "NOEQUALS"
    assert "KEY=VALUE" in form.messages["env"].value
    assert form.manifests == "" and form.submit_button.disabled


def test_submit_to_the_simulated_pool(sim_pool: SimPoolHandle) -> None:
    from ranktable.usecases.jobs import ClusterSettings, Jobs

    jobs = Jobs(ClusterSettings(str(sim_pool.kubeconfig), sim_pool.context))
    client = jobs.client()
    form = JobComposer(jobs=jobs)
    form.name.value = "widget1"
    form.image.value = "bert:v1"
    form.nodes.value = 1
    form.command.value = "sleep 30"
    result = form.submit()
    assert result is not None and result["name"] == "widget1"
    assert [j.name for j in client.list_jobs()] == ["widget1"]
    assert form.submit() is None and "already exists" in form.status.value
    client.stop("widget1")
