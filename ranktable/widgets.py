"""`ranktable.widgets.JobComposer()`: the job spec as an ipywidgets form, validated as you type.

The form maps to `JobSpec.to_dict()` fields; validation, composition and submission are the jobs
layer's (`validate_spec`, `compose`, `ClusterClient.submit`). Messages appear next to their field.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as w

from ranktable.compose.argv import shell_words
from ranktable.compose.spec_flags import SHELL
from ranktable.errors import InputError, RanktableError

#: how a volume is typed on one line (the CLI's --hostpath/--pvc/--nfs syntax, with the kind first)
VOLUME_FORMS = {
    "hostPath": ("name", "path", "mount_path"),
    "pvc": ("name", "claim", "mount_path"),
    "nfs": ("name", "server", "path", "mount_path"),
}


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


def _secrets(text: str, field: str) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for name, ref in _pairs(text, field).items():
        secret, sep, key = ref.partition(":")
        if not sep or not secret or not key:
            raise InputError(f"expected NAME=SECRET:KEY for {name}", where=field)
        out[name] = {"secret": secret, "key": key}
    return out


def _volumes(text: str, field: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        kind, _, rest = line.partition(":")
        names = VOLUME_FORMS.get(kind)
        parts = rest.split(":")
        if names is None or len(parts) != len(names):
            forms = "; ".join(f"{k}:{':'.join(n.upper() for n in v)}" for k, v in VOLUME_FORMS.items())
            raise InputError(f"line {number}: expected one of {forms}, got {line!r}", where=field)
        out.append({"kind": kind, **dict(zip(names, parts, strict=True))})
    return out


def _part(prop: dict[str, Any]) -> w.Widget:
    """A widget for one part of a nested record (lists are typed as one shell-like line)."""
    title = str(prop.get("title") or "")
    if prop.get("type") == "integer":
        return w.BoundedIntText(
            value=prop.get("default", prop.get("minimum", 0)),
            min=prop.get("minimum", 0),
            max=prop.get("maximum", 2**31 - 1),
            description=title,
        )
    return w.Text(description=title, placeholder=str(prop.get("description") or ""))


def _kinds(prop: dict[str, Any]) -> list[Any]:
    """A schema property's types as a list (``type`` may be one name or several)."""
    kind = prop.get("type")
    return kind if isinstance(kind, list) else [kind]


class _Field:
    """One schema property as a widget, and how to read it back as JSON."""

    def __init__(self, name: str, prop: dict[str, Any], defs: dict[str, Any]) -> None:
        self.name = name
        title = str(prop.get("title") or name)
        kinds = _kinds(prop)
        default = prop.get("default")
        self.read: Any
        if "enum" in prop:
            self.widget: w.Widget = w.Dropdown(
                options=list(prop["enum"]), value=default or prop["enum"][0], description=title
            )
            self.read = lambda: self.widget.value
        elif "integer" in kinds:
            self.widget = w.BoundedIntText(
                value=default if default is not None else prop.get("minimum", 0),
                min=prop.get("minimum", 0),
                max=prop.get("maximum", 2**31 - 1),
                description=title,
            )
            self.read = lambda: int(self.widget.value)
        elif "boolean" in kinds:
            self.widget = w.Checkbox(value=bool(default), description=title)
            self.read = lambda: bool(self.widget.value)
        elif name == "command":
            self.widget = w.Textarea(description=title, placeholder="python train.py (run with bash -c)")
            self.read = lambda: [*SHELL, self.widget.value] if self.widget.value.strip() else []
        elif "anyOf" in prop:  # a nested record (entry point, parallel sizes): one widget per part
            record = defs[prop["anyOf"][0]["$ref"].rsplit("/", 1)[-1]]
            self.parts = {key: _part(sub) for key, sub in record["properties"].items()}
            self.widget = w.VBox([w.HTML(f"<b>{html.escape(title)}</b>"), *self.parts.values()])
            self.read = lambda: self._record(record)
        elif "array" in kinds and "$ref" not in prop.get("items", {}):  # strings, one per line
            self.widget = w.Textarea(description=title, placeholder=str(prop.get("description") or ""))
            self.read = lambda: [line for line in self.widget.value.splitlines() if line.strip()]
        elif "array" in kinds:  # volumes, one per line
            self.widget = w.Textarea(description=title, placeholder="pvc:data:my-claim:/data")
            self.read = lambda: _volumes(self.widget.value, name)
        elif "object" in kinds:
            values = prop.get("additionalProperties") or {}
            if "$ref" in values:  # NAME=SECRET:KEY
                self.widget = w.Textarea(description=title, placeholder="NAME=SECRET:KEY per line")
                self.read = lambda: _secrets(self.widget.value, name)
            else:
                self.widget = w.Textarea(description=title, placeholder="KEY=VALUE per line")
                self.read = lambda: _pairs(self.widget.value, name)
        else:  # strings; an empty optional string is "not set"
            self.widget = w.Text(
                value=default or "", description=title, placeholder=prop.get("description", "")
            )
            nullable = "null" in kinds
            self.read = lambda: (self.widget.value.strip() or None) if nullable else self.widget.value.strip()

    def _record(self, record: dict[str, Any]) -> dict[str, Any] | None:
        """The record's value; None while a required part is empty or every part is at its default."""
        values: dict[str, Any] = {}
        for key, sub in record["properties"].items():
            value = self.parts[key].value
            if "array" in _kinds(sub):
                values[key] = shell_words(value, f"{self.name}.{key}")
            elif sub.get("type") == "integer":
                values[key] = int(value)
            else:
                values[key] = value.strip()
        if any(not values[key] for key in record["required"]):
            return None
        if not record["required"] and all(
            values[k] == s.get("default") for k, s in record["properties"].items()
        ):
            return None
        return values

    def observe(self, callback: Any) -> None:
        for child in getattr(self, "parts", {"": self.widget}).values():
            child.observe(callback, names="value")


class JobComposer(w.VBox):
    """A form for a job spec built from the JobSpec JSON Schema: every field, messages beside each."""

    def __init__(
        self, jobs: Any = None, namespace: str = "default", spec_class: type | None = None, **kwargs: Any
    ) -> None:
        from ranktable.compose.spec_schema import job_spec_schema

        schema = job_spec_schema(spec_class) if spec_class else job_spec_schema()
        self.jobs = jobs  # the job use cases to submit through (None: the default cluster)
        self.fields = {
            name: _Field(name, prop, schema["$defs"]) for name, prop in schema["properties"].items()
        }
        for name, field in self.fields.items():
            setattr(self, name, field.widget)
        self.fields["namespace"].widget.value = namespace
        self.messages = {f: w.HTML() for f in (*self.fields, "other")}
        self.yaml = w.HTML()
        self.submit_button = w.Button(description="Submit", button_style="primary", disabled=True)
        self.status = w.HTML()
        self.issues: list[dict[str, Any]] = []
        self.manifests = ""
        rows = [w.VBox([field.widget, self.messages[name]]) for name, field in self.fields.items()]
        super().__init__(
            [*rows, self.messages["other"], w.HBox([self.submit_button, self.status]), self.yaml], **kwargs
        )
        for field in self.fields.values():
            field.observe(lambda _change: self.refresh())
        self.submit_button.on_click(lambda _b: self.submit())
        self.refresh()

    def spec_dict(self) -> dict[str, Any]:
        """The form as `JobSpec.from_dict` input; field errors raise InputError naming the field."""
        data: dict[str, Any] = {}
        for name, field in self.fields.items():
            value = field.read()
            if value is not None:
                data[name] = value
        data["namespace"] = data.get("namespace") or "default"
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
        """Submit the composed job through the given (or the default cluster's) job use cases."""
        from ranktable.usecases.jobs import ClusterSettings, Jobs

        self.refresh()
        if self.submit_button.disabled:
            self.status.value = "fix the errors first"
            return None
        jobs = self.jobs or Jobs(ClusterSettings())
        try:
            result = jobs.submit(jobs.spec(self.spec_dict()))
        except RanktableError as exc:
            self.status.value = (
                f'<span style="color:var(--jp-error-color1)">{html.escape(exc.message)}</span>'
            )
            return None
        self.status.value = f"submitted <b>{html.escape(result['name'])}</b>"
        return result
