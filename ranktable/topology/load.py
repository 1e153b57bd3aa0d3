"""One entry point for topology files: detect the format from content, read, add node aliases.

The formats and their names (as ``--format`` takes them) are listed in :data:`FORMATS`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from ranktable.errors import InputError
from ranktable.limits import MAX_FILE_BYTES, decode_utf8, read_bytes
from ranktable.topology._fields import parse_document, parse_documents, single_document
from ranktable.topology.bandwidth import give_tier_bandwidths
from ranktable.topology.model import YAML_KIND, Topology
from ranktable.topology.tor_file import GZIP_MAGIC

FORMATS: dict[str, str] = {
    "tor-json": "MindCluster basic-tor-node-cm tor_info JSON, or the whole ConfigMap",
    "hypernode": "Volcano HyperNode manifests (with --nodes: kubectl get nodes -o json)",
    "slurm": "Slurm topology.conf",
    "labels": "a NodeList whose node labels name the switch per tier",
    "tor-file": "the platform's ranktable_tor.json (gzip + base64)",
    "yaml": f"ranktable's own YAML (kind: {YAML_KIND})",
}
MAX_TOPOLOGY_BYTES = MAX_FILE_BYTES

_KIND = re.compile(r"""kind["']?\s*:\s*["']?([A-Za-z]+)""")  # where the line before it is _KIND_PREFIX
_KIND_PREFIX = re.compile(r"""[\s\-{,]*["']?""")
_SLURM = re.compile(r"(?im)^[ \t]*switchname[ \t]*=")
_BASE64_TEXT = re.compile(r"^[A-Za-z0-9+/=\s]+$")


def _format_list() -> str:
    return ", ".join(FORMATS)


def _classify(doc: Any) -> str | None:
    """The format of one parsed document with no (known) kind, from its shape."""
    if not isinstance(doc, dict):
        return None
    if doc.get("kind") == YAML_KIND or "generate" in doc or ("switches" in doc and "servers" in doc):
        return "yaml"
    data = doc.get("data")
    if isinstance(data, dict) and "tor_info" in data:
        return "tor-json"
    entries = doc.get("server_list")
    if isinstance(entries, list):
        first = next((e for e in entries if isinstance(e, dict)), {})
        if "device" in first or "server_id" in first:
            return "tor-file"
        if "server" in first or "tor_ip" in first or "tor_id" in first or "tor_count" in doc:
            return "tor-json"
    items = doc.get("items")
    if isinstance(items, list) and items and isinstance(items[0], dict):
        kind = items[0].get("kind")
        if kind == "HyperNode":
            return "hypernode"
        if kind == "Node" or ("metadata" in items[0] and "status" in items[0]):
            return "labels"
    if isinstance(doc.get("spec"), dict) and "members" in doc["spec"]:
        return "hypernode"
    return None


def detect_format(text: str) -> str:
    """The format name of a topology file's content; InputError listing the formats if unclear."""
    return _detect(text)[0]


def _detect(text: str) -> tuple[str, list[Any] | None]:
    """The format name, and the documents when they had to be parsed to tell (read once, not twice)."""
    stripped = text.strip()
    if not stripped:
        raise InputError("is empty", fix=f"expected one of: {_format_list()}")
    if stripped.startswith("H4sI") and _BASE64_TEXT.match(stripped[:4096]):
        return "tor-file", None  # base64 of gzip always starts H4sI
    if stripped.startswith(("{", "[")):  # JSON: parsed as JSON, then told by its shape
        try:
            docs: list[Any] = parse_documents(stripped, "")
        except InputError:
            docs = []
        found = _classify(docs[0]) if docs else None
        if found is not None:
            return found, docs
    if "switchname" in text.casefold() and _SLURM.search(text):  # (a C scan first: 664 KB in 0.5 ms)
        return "slurm", None
    kinds = _kinds(text)
    if YAML_KIND in kinds:
        return "yaml", None
    if kinds & {"HyperNode", "HyperNodeList"}:
        return "hypernode", None
    if "ConfigMap" in kinds and "tor_info" in text:
        return "tor-json", None
    if kinds & {"Node", "NodeList"}:
        return "labels", None
    try:
        docs = parse_documents(text, "")
    except InputError:
        docs = []
    present = [d for d in docs if d is not None]
    found = _classify(present[0]) if present else None
    if found is None:
        raise InputError(
            "cannot tell the topology format from the content",
            fix=f"pass --format, one of: {_format_list()}",
        )
    return found, docs


def _kinds(text: str) -> set[str]:
    """The values of `kind:` keys that start a line (after indentation, `- `, `{`, a quote): found by
    the word, then the line's start checked (a pattern anchored at every line start took ~8 ms of a
    HyperNode file's 37,000 lines)."""
    found: set[str] = set()
    line_start = searched = 0
    for match in _KIND.finditer(text):
        newline = text.rfind("\n", searched, match.start())
        if newline >= 0:
            line_start = newline + 1
        searched = match.start()
        if _KIND_PREFIX.fullmatch(text, line_start, match.start()):
            found.add(match.group(1))
    return found


def _read(path: str | os.PathLike[str], source: str) -> tuple[str, bytes]:
    raw = read_bytes(path, limit=MAX_TOPOLOGY_BYTES, what="topology file")
    if raw.startswith(GZIP_MAGIC):
        return "", raw
    return decode_utf8(raw, source, what="topology file (or give the gzip tor file itself)"), raw


def load_topology(
    path: str | os.PathLike[str],
    fmt: str | None = None,
    nodes: str | os.PathLike[str] | None = None,
    *,
    label_keys: Sequence[str] | None = None,
    tier_bandwidth: list[tuple[int, float | None, float | None]] | None = None,
) -> Topology:
    """Read a topology file of any supported format (detected from content when ``fmt`` is None).

    ``nodes`` is a NodeList file (``kubectl get nodes -o json``): it resolves HyperNode members, and
    for every format it adds node names and addresses as aliases of the servers they name.
    ``label_keys`` (tier 1 first) are the node labels naming each tier's switch for the labels format.
    Every tier gets uplink figures (`ranktable.topology.bandwidth`): ``tier_bandwidth`` (the
    ``--tier-bandwidth`` settings), else the file's, else the documented default, said in the warnings.
    """
    source = os.fspath(path)
    if fmt is not None and fmt not in FORMATS:
        raise InputError(
            f"unknown topology format {fmt!r}", where="--format", fix=f"use one of: {_format_list()}"
        )
    text, raw = _read(path, source)
    docs: list[Any] | None = None
    if fmt is None:
        if not text:
            fmt = "tor-file"
        else:
            try:
                fmt, docs = _detect(text)
            except InputError as err:
                raise InputError(err.reason, where=source, fix=err.fix) from None
    if label_keys is not None and fmt != "labels":
        raise InputError(
            f"label keys apply to the labels format, but {source} is {fmt}",
            where="--label-keys",
            fix="drop --label-keys, or give a NodeList with --format labels",
        )
    if not text and fmt != "tor-file":
        raise InputError(f"is gzip data, which only the tor-file format uses (not {fmt})", where=source)
    from ranktable.topology.k8s_nodes import add_node_aliases, read_nodes

    node_list = read_nodes(nodes) if nodes is not None else None
    nodes_source = os.fspath(nodes) if nodes is not None else "nodes"
    topology = _read_format(fmt, text, raw, source, docs, node_list, nodes_source, label_keys)
    if node_list is not None and fmt != "hypernode":
        add_node_aliases(topology, node_list, nodes_source)
        topology.validate()
    give_tier_bandwidths(topology, tier_bandwidth)
    return topology


def _read_format(
    fmt: str,
    text: str,
    raw: bytes,
    source: str,
    parsed: list[Any] | None,
    node_list: list[dict[str, Any]] | None,
    nodes_source: str,
    label_keys: Sequence[str] | None,
) -> Topology:
    """The format's reader, imported only now (a Slurm file needs neither YAML nor the other readers),
    given the documents format detection already parsed, if it did."""
    present = [d for d in parsed if d is not None] if parsed is not None else None
    if fmt == "tor-json":
        from ranktable.topology.tor_info import topology_from_tor_document

        doc = single_document(present, source) if present is not None else parse_document(text, source)
        return topology_from_tor_document(doc, source)
    if fmt == "hypernode":
        from ranktable.topology.hypernode import load_hypernode_documents

        docs = parsed if parsed is not None else parse_documents(text, source)
        return load_hypernode_documents(docs, source, node_list, nodes_source)
    if fmt == "slurm":
        from ranktable.topology.slurm import topology_from_slurm

        return topology_from_slurm(text, source)
    if fmt == "labels":
        from ranktable.topology.labels import load_labels_document

        doc = single_document(present, source) if present is not None else parse_document(text, source)
        return load_labels_document(doc, source, label_keys)
    if fmt == "tor-file":
        from ranktable.topology.tor_file import load_tor_file, topology_from_tor_file

        if present and isinstance(present[0], dict):
            return topology_from_tor_file(present[0], source)
        return load_tor_file(raw, source)
    from ranktable.topology.yaml_format import load_yaml_topology

    return load_yaml_topology(text, source)
