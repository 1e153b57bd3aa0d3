"""`ranktable.widgets.JobComposer()`: the job spec as an ipywidgets form, validated as you type.

The form maps to `JobSpec.to_dict()` fields; validation, composition and submission are the jobs
layer's (`validate_spec`, `compose`, `ClusterClient.submit`). Messages appear next to their field.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as w

from ranktable.errors import InputError, RanktableError

SHELL = ["/bin/bash", "-c"]
FIELDS = ("name", "image", "namespace", "framework", "command", "nodes", "npus_per_node", "cpu", "memory")


def _pairs(text: str, field: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise InputError(f"line {number}: expected KEY=VALUE, got {line!r}", where=field)
        out[key.strip()] = value
    return out


class JobComposer(w.VBox):
    """A form for a job spec: per-field messages, the YAML preview, and Submit."""

    def __init__(self, client: Any = None, namespace: str = "default", **kwargs: Any) -> None:
        from ranktable.compose.spec import FRAMEWORKS

        self.client = client
        self.name = w.Text(description="Job name", placeholder="bert-pretrain")
        self.image = w.Text(description="Image", placeholder="bert_pretrain_mindspore:v1")
        self.namespace = w.Text(value=namespace, description="Namespace")
        self.framework = w.Dropdown(options=list(FRAMEWORKS), value="mindspore", description="Framework")
        self.command = w.Textarea(description="Command", placeholder="python train.py (run with bash -c)")
        self.nodes = w.BoundedIntText(value=1, min=1, max=4096, description="Nodes")
        self.npus_per_node = w.Dropdown(options=[1, 2, 4, 8, 16], value=8, description="NPUs/node")
        self.cpu = w.Text(description="CPU/pod", placeholder="192")
        self.memory = w.Text(description="Memory/pod", placeholder="1536Gi")
        self.env = w.Textarea(description="Env", placeholder="KEY=VALUE per line")
        self.routing = w.Checkbox(value=False, description="Ranktable routing")
        self.messages = {f: w.HTML() for f in (*FIELDS, "env", "routing", "other")}
        self.yaml = w.HTML()
        self.submit_button = w.Button(description="Submit", button_style="primary", disabled=True)
        self.status = w.HTML()
        self.issues: list[dict[str, Any]] = []
        self.manifests = ""
        rows = []
        for field in (*FIELDS, "env", "routing"):
            rows.append(w.VBox([getattr(self, field), self.messages[field]]))
        super().__init__(
            [*rows, self.messages["other"], w.HBox([self.submit_button, self.status]), self.yaml], **kwargs
        )
        for field in (*FIELDS, "env", "routing"):
            getattr(self, field).observe(lambda _change: self.refresh(), names="value")
        self.submit_button.on_click(lambda _b: self.submit())
        self.refresh()

    def spec_dict(self) -> dict[str, Any]:
        """The form as `JobSpec.from_dict` input; field errors raise InputError naming the field."""
        data: dict[str, Any] = {
            "name": self.name.value.strip(),
            "image": self.image.value.strip(),
            "namespace": self.namespace.value.strip() or "default",
            "framework": self.framework.value,
            "command": [*SHELL, self.command.value] if self.command.value.strip() else [],
            "nodes": int(self.nodes.value),
            "npus_per_node": int(self.npus_per_node.value),
            "routing": bool(self.routing.value),
            "env": _pairs(self.env.value, "env"),
        }
        for field in ("cpu", "memory"):
            if getattr(self, field).value.strip():
                data[field] = getattr(self, field).value.strip()
        return data

    def refresh(self) -> None:
        """Re-validate and re-compose; every message goes next to its field."""
        from ranktable.usecases.jobs import ClusterSettings, Jobs, exc_issue

        for message in self.messages.values():
            message.value = ""
        try:
            composed = Jobs(ClusterSettings()).compose(self.spec_dict())
        except InputError as exc:  # a form field that does not parse (e.g. an env line without `=`)
            composed = {"issues": [exc_issue(exc)], "yaml": ""}
        self.issues, self.manifests = composed["issues"], composed["yaml"]
        for issue in self.issues:
            field = str(issue["field"] or "").removeprefix("spec.").split(".")[0].split("[")[0]
            target = self.messages.get(field, self.messages["other"])
            colour = "var(--jp-error-color1)" if issue["severity"] == "error" else "var(--jp-warn-color1)"
            fix = f" — {html.escape(issue['fix'])}" if issue.get("fix") else ""
            target.value += (
                f'<div style="color:{colour}">{html.escape(issue["severity"])}: '
                f"{html.escape(issue['message'])}{fix}</div>"
            )
        self.yaml.value = f"<pre>{html.escape(self.manifests)}</pre>" if self.manifests else ""
        self.submit_button.disabled = not self.manifests or any(i["severity"] == "error" for i in self.issues)

    def submit(self) -> dict[str, Any] | None:
        """Submit the composed job with the given (or a default) cluster client."""
        from ranktable.cluster.client import ClusterClient
        from ranktable.compose.manifests import compose
        from ranktable.compose.spec import JobSpec

        self.refresh()
        if self.submit_button.disabled:
            self.status.value = "fix the errors first"
            return None
        spec = JobSpec.from_dict(self.spec_dict())
        client = self.client or ClusterClient(namespace=spec.namespace)
        try:
            result = client.submit(compose(spec)).to_json()
        except RanktableError as exc:
            self.status.value = (
                f'<span style="color:var(--jp-error-color1)">{html.escape(exc.message)}</span>'
            )
            return None
        self.status.value = f"submitted <b>{html.escape(result['name'])}</b>"
        return result
