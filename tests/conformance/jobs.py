"""Volcano Jobs as data for the scenarios."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from tests.integration.sim_helpers import volcano_job

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "reference" / "lite-volcano-job.yaml"


def reference_manifest(name: str) -> list[dict[str, Any]]:
    """The platform guide's ConfigMap + Job, renamed to `name`."""
    docs = [d for d in yaml.safe_load_all(REFERENCE.read_text()) if d]
    text = yaml.safe_dump_all(docs).replace("yourvcjobname", name)
    return list(yaml.safe_load_all(text))


def shell_job(name: str, script: str, replicas: int = 1, npus: int = 0, **spec: Any) -> dict[str, Any]:
    """A one-task job whose pods run `sh -c script` (no NPUs unless asked, so it fits anywhere)."""
    job = volcano_job(
        name, replicas, ["sh", "-c", script], npus=max(npus, 1), plugins={"svc": []}, restart="Never"
    )
    container = job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
    if npus == 0:
        container.pop("resources", None)
    job["spec"]["tasks"][0]["template"]["spec"].pop("affinity", None)
    job["metadata"]["namespace"] = "default"
    job["spec"].update(copy.deepcopy(spec))
    return job
