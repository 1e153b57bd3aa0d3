"""`/ranktable/validate` and `/ranktable/plan`: rank tables and topologies inline or as files in the root."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ranktable.errors import InputError, RanktableError

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
        if inline is not None and path:
            raise InputError(f"give either {key} or {key}_path, not both", where=key)
        if path:
            if not isinstance(path, str):
                raise InputError("must be a string", where=f"{key}_path")
            return self.services.local_file(path, f"{key}_path").read_bytes(), path
        if isinstance(inline, str | dict):
            return inline, key
        if inline is None:
            raise InputError("is required", where=key, fix=f"send `{key}` (content) or `{key}_path` (a file)")
        raise InputError("must be a JSON object or a string", where=key)

    def validate(self, body: dict[str, Any]) -> dict[str, Any]:
        from ranktable.usecases.jobs import rank_table_report

        data, source = self._document(body, "ranktable")
        return rank_table_report(data, source)

    def _topology(self, body: dict[str, Any]) -> Any:
        from ranktable.topology.load import load_topology

        fmt = body.get("topology_format") or None
        if fmt is not None and not isinstance(fmt, str):
            raise InputError("must be a string", where="topology_format")
        if body.get("topology_path"):
            return load_topology(self.services.local_file(str(body["topology_path"]), "topology_path"), fmt)
        if body.get("topology") is None:
            if self.config.topology:
                return load_topology(self.config.topology, self.config.topology_format or None)
            raise InputError(
                "is required", where="topology", fix="send `topology` (content) or `topology_path` (a file)"
            )
        data, _ = self._document(body, "topology")
        text = data if isinstance(data, str | bytes) else json.dumps(data)
        with tempfile.TemporaryDirectory(prefix="ranktable-topology-") as tmp:
            file = Path(tmp) / "topology"
            file.write_bytes(text.encode() if isinstance(text, str) else text)
            try:
                return load_topology(file, fmt)
            except RanktableError as exc:  # name the request field, not our temporary file
                if exc.where:
                    exc.where = exc.where.replace(str(file), "topology")
                    exc.args = (exc.message,)
                raise

    def plan(self, body: dict[str, Any]) -> dict[str, Any]:
        from ranktable.hccl.io import parse_rank_table
        from ranktable.usecases.layout import layout_json, query_from_fields

        size = message_bytes(body)
        query = query_from_fields(body.get("algo"), body.get("parallel"), body.get("operation"))
        data, source = self._document(body, "ranktable")
        table = parse_rank_table(data, source)
        topology = self._topology(body)
        return layout_json(table, topology, message_bytes=size, title=source, query=query)


def message_bytes(body: dict[str, Any]) -> int | None:
    value = body.get("message_bytes")
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise InputError(f"must be a positive integer, not {value!r}", where="message_bytes")
    return value
