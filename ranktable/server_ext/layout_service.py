"""`/ranktable/validate` and `/ranktable/plan`: rank tables and topologies inline or as files in the root."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ranktable.errors import InputError
from ranktable.server_ext.errors import content_checks
from ranktable.usecases.jobs import rank_table_report
from ranktable.usecases.layout import message_bytes_of, plan_json, topology_from

if TYPE_CHECKING:
    from ranktable.server_ext.services import Services


class LayoutService:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.config = services.config

    def _document(self, body: dict[str, Any], key: str) -> tuple[str | bytes | dict[str, Any], str]:
        """A rank table / topology given inline (`key`) or as a file in the Jupyter root (`key_path`)."""
        inline = body.get(key)
        path = body.get(f"{key}_path")
        for given in (key, f"{key}_path"):
            if given in body and body[given] is None:  # null is no value of either field's type
                raise InputError("must not be null (leave the field out instead)", where=given)
        if path is not None:  # a field that is present is checked, even one another field would make moot
            if not isinstance(path, str) or not path:
                raise InputError(
                    "must be a file path relative to the Jupyter root",
                    where=f"{key}_path",
                    fix="e.g. ranktable.json",
                )
            if inline is not None:
                raise InputError(f"give either {key} or {key}_path, not both", where=key)
            return self.services.local_file(path, f"{key}_path").read_bytes(), path
        if isinstance(inline, str | dict):
            return inline, key
        if inline is None:
            raise InputError("is required", where=key, fix=f"send `{key}` (content) or `{key}_path` (a file)")
        raise InputError("must be a JSON object or a string", where=key)

    def validate(self, body: dict[str, Any]) -> dict[str, Any]:  # a table's content: a verdict, with 200
        data, source = self._document(body, "ranktable")
        return rank_table_report(data, source)

    def _topology(self, body: dict[str, Any]) -> Any:
        fmt = body.get("topology_format") or None
        if fmt is not None and not isinstance(fmt, str):
            raise InputError("must be a string", where="topology_format")
        path = body.get("topology_path")
        content = None
        if not path and body.get("topology") is not None:
            data, _ = self._document(body, "topology")
            content = data if isinstance(data, str | bytes) else json.dumps(data)
        return topology_from(
            path=self.services.local_file(str(path), "topology_path") if path else None,
            content=content,
            fmt=fmt,
            default=self.config.topology or None,
            default_format=self.config.topology_format or None,
        )

    def plan(self, body: dict[str, Any]) -> dict[str, Any]:
        """The request's shape is checked first (400); what its documents and query mean, second (422)."""
        message_bytes_of(body)
        document = self._document(body, "ranktable")
        path = body.get("topology_path")
        if path is not None:
            if not isinstance(path, str) or not path:
                raise InputError("must be a file path relative to the Jupyter root", where="topology_path")
            self.services.local_file(path, "topology_path")
        with content_checks():
            return plan_json(body, lambda: document, lambda: self._topology(body))
