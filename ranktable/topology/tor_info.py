"""MindCluster's ``basic-tor-node-cm`` (kube-system): ``tor_info`` JSON plus ``tor_level``.

``tor_info`` lists ToRs (tier 1, named by ``tor_ip``, else ``tor-<tor_id>``) and the servers under each
(``server_ip``, which matches a node address and a rank table's ``server_id``). ``tor_count`` is the
number of servers under one ToR (the "net slice" count the Ascend scheduler plugin transposes ToRs by;
MindCluster's `lld_to_cm.py --num`, default 4), not the number of ToRs; a ToR listing more servers, or
a ``slice_id`` beyond it, is reported as a warning (the generator writes a fixed number). ``tor_level``:

- ``single_layer``: the ToRs are the whole tree (tier 1 only);
- ``double_layer``: the ToRs hang off a spine tier. The platform's JSON does not name spines, so all
  ToRs go under one spine called ``spine`` — unless each ToR entry carries the optional ``spine_ip``
  (or ``spine_id``) field, a ranktable extension that names its spine.

Without ``tor_level`` (a bare ``tor_info`` file), the level is ``double_layer`` when spines are named,
else ``single_layer``.
"""

from __future__ import annotations

from typing import Any

from ranktable.errors import InputError
from ranktable.limits import MAX_SERVERS, brief, load_yaml_all
from ranktable.topology._fields import Field, location, parse_document, parse_json
from ranktable.topology.model import Switch, Topology

TOR_LEVELS = ("single_layer", "double_layer")
IMPLICIT_SPINE = "spine"


def _tor_name(tor: Field) -> str:
    ip = tor.opt("tor_ip")
    if ip is not None:
        return ip.text()
    tor_id = tor.opt("tor_id")
    if tor_id is None:
        raise tor.error("a ToR needs `tor_ip` or `tor_id`")
    return f"tor-{tor_id.integer(minimum=0)}"


def _spine_name(tor: Field) -> str | None:
    for key in ("spine_ip", "spine_id"):
        found = tor.opt(key)
        if found is not None:
            return found.text()
    return None


def _parse_tor_info_text(text: str, source: str, path: str) -> tuple[Any, str | None]:
    """The ``tor_info`` JSON; JSON with trailing commas (what MindCluster's own `lld_to_cm.py` writes
    after every ``slice_id``) is read as YAML, with a warning: Volcano's Go JSON parser refuses it."""
    try:
        return parse_json(text, source, path), None
    except InputError as strict:
        if "not valid JSON" not in strict.reason:
            raise
        try:
            docs = load_yaml_all(text, location(source, path))
        except InputError:
            raise strict from None
        if len(docs) != 1 or not isinstance(docs[0], dict):
            raise strict from None
        note = (
            f"{location(source, path)}: {strict.reason}; read leniently, but Volcano's JSON parser will "
            "refuse it (remove the trailing commas)"
        )
        return docs[0], note


def topology_from_tor_info(
    tor_info: dict[str, Any] | str,
    tor_level: str | None = None,
    source: str = "tor_info",
    path: str = "",
) -> Topology:
    """Build the topology from ``tor_info`` (parsed, or the JSON text the ConfigMap holds)."""
    lenient_note = None
    if isinstance(tor_info, str):
        tor_info, lenient_note = _parse_tor_info_text(tor_info, source, path)
    root = Field(tor_info, path, source)
    root.mapping()
    tors = list(root.key("server_list").items())
    if not tors:
        raise root.child("server_list", []).error("lists no ToR")
    count = root.opt("tor_count")
    per_tor = count.integer(minimum=1, maximum=MAX_SERVERS) if count is not None else None

    spines = [_spine_name(tor) for tor in tors]
    named = [s for s in spines if s is not None]
    if tor_level is None:
        tor_level = "double_layer" if named else "single_layer"
    if tor_level not in TOR_LEVELS:
        raise Field(tor_level, "tor_level", source).error(
            f"unknown tor_level {tor_level!r}", fix=f"use one of {', '.join(TOR_LEVELS)}"
        )
    if named and tor_level == "single_layer":
        index = spines.index(named[0])
        raise tors[index].error("names a spine but tor_level is single_layer", fix="use double_layer")
    if named and len(named) != len(tors):
        index = spines.index(None)
        raise tors[index].error("has no spine_ip while other ToRs name theirs; give every ToR one or none")

    topo = Topology(source=source, tier_names={1: "tor"})
    if lenient_note:
        topo.warnings.append(lenient_note)
    if tor_level == "double_layer":
        topo.tier_names[2] = "spine"
        for name in named or [IMPLICIT_SPINE]:
            topo.switches.setdefault(name, Switch(name, 2))
    for tor, spine in zip(tors, spines, strict=True):
        name = _tor_name(tor)
        if name in topo.switches:
            raise tor.error(
                f"ToR {name!r} is listed twice"
                if topo.switches[name].tier == 1
                else f"ToR {name!r} has the same name as a spine"
            )
        parent = (spine or IMPLICIT_SPINE) if tor_level == "double_layer" else None
        topo.switches[name] = Switch(name, 1, parent)
        servers = list(tor.key("server").items())
        if per_tor is not None and len(servers) > per_tor:
            topo.warnings.append(
                f"{source}: ToR {name} lists {len(servers)} servers but tor_count (servers per ToR) is "
                f"{per_tor}; the Ascend scheduler uses only {per_tor} slices per ToR"
            )
        for server in servers:
            ip = server.key("server_ip").text()
            if ip in topo.server_leaf:
                raise server.child("server_ip", ip).error(
                    f"server {ip} is already under ToR {topo.server_leaf[ip]!r}; a server has one ToR"
                )
            npus = server.opt("npu_count")
            if npus is not None:
                npus.integer(minimum=0)
            slot = server.opt("slice_id")
            if slot is not None:
                topo.slice_ids[ip] = slot.integer(minimum=0, maximum=MAX_SERVERS)
            topo.attach_server(ip, name)
    topo.validate()
    return topo


def topology_from_tor_configmap(configmap: dict[str, Any], source: str = "basic-tor-node-cm") -> Topology:
    """The whole ConfigMap (``kubectl get cm basic-tor-node-cm -n kube-system -o json``)."""
    root = Field(configmap, "", source)
    kind = root.opt("kind")
    if kind is not None and kind.text() != "ConfigMap":
        raise kind.error(f"expected a ConfigMap, got {brief(kind.value)}")
    data = root.key("data")
    info = data.key("tor_info", fix="the MindCluster ConfigMap basic-tor-node-cm carries it")
    level = data.opt("tor_level")
    level_text = level.text() if level is not None else None
    if level is not None and level_text not in TOR_LEVELS:
        raise level.error(f"unknown tor_level {level_text!r}", fix=f"use one of {', '.join(TOR_LEVELS)}")
    if isinstance(info.value, str):
        return topology_from_tor_info(info.value, level_text, source, info.path)
    return topology_from_tor_info(info.mapping(), level_text, source, info.path)


def load_tor_info_text(text: str, source: str = "") -> Topology:
    """A bare ``tor_info`` JSON file, or the ConfigMap as JSON or YAML."""
    return topology_from_tor_document(parse_document(text, source), source)


def topology_from_tor_document(data: Any, source: str = "") -> Topology:
    """The parsed file: a bare ``tor_info`` or the ConfigMap."""
    if isinstance(data, dict) and ("data" in data or data.get("kind") == "ConfigMap"):
        return topology_from_tor_configmap(data, source)
    return topology_from_tor_info(
        data if isinstance(data, dict) else Field(data, "", source).mapping(), None, source
    )
