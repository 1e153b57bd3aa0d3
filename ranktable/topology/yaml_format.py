"""The project's own topology file: a small YAML listing switches and servers (or a generated tree).

It is what the simulator and the job tools write (``Topology.to_yaml_data``) and the easiest format
to write by hand; see docs/topology.md for the reference.
"""

from __future__ import annotations

from typing import Any

from ranktable.errors import InputError
from ranktable.limits import MAX_DEVICES_PER_SERVER, MAX_SERVERS
from ranktable.topology._fields import Field, parse_document
from ranktable.topology.model import YAML_KIND, Switch, Topology
from ranktable.topology.synthetic import synthetic_topology

TOP_KEYS = {"kind", "version", "tiers", "switches", "servers", "generate"}
SWITCH_KEYS = {"name", "tier", "parent", "uplink_gbps", "oversubscription"}
SERVER_KEYS = {"name", "leaf", "leaves", "aliases", "slice"}
GENERATE_KEYS = {
    "servers",
    "leaves",
    "spines",
    "cores",
    "ip_base",
    "uplink_gbps",
    "oversubscription",
    "rails",
    "devices_per_server",
}


def _check_keys(node: Field, allowed: set[str]) -> None:
    for key in node.mapping():
        if str(key) not in allowed:
            raise node.child(str(key), None).error(
                "unknown field", fix=f"allowed fields: {', '.join(sorted(allowed))}"
            )


def _tier_names(tiers: Field) -> dict[int, str]:
    if isinstance(tiers.value, list):
        return {i: item.text() for i, item in enumerate(tiers.items(), start=1)}
    names: dict[int, str] = {}
    for key, item in tiers.entries():
        tier = Field(key, item.path, item.source).integer(minimum=1)
        names[tier] = item.text()
    return names


def _generate(spec: Field, source: str) -> Topology:
    _check_keys(spec, GENERATE_KEYS)
    ints = {k: spec.key(k).integer(minimum=1, maximum=MAX_SERVERS) for k in ("servers", "leaves")}
    for k in ("spines", "cores", "rails", "devices_per_server"):
        found = spec.opt(k)
        if found is not None:
            top = MAX_DEVICES_PER_SERVER if k == "devices_per_server" else MAX_SERVERS
            ints[k] = found.integer(minimum=0 if k != "devices_per_server" else 1, maximum=top)
    uplink = spec.opt("uplink_gbps")
    over = spec.opt("oversubscription")
    ip_base = spec.opt("ip_base")
    try:
        topo, _ = synthetic_topology(
            ints["servers"],
            ints["leaves"],
            ints.get("spines", 0),
            ints.get("cores", 0),
            ip_base=ip_base.text() if ip_base else "10.0.0.1",
            uplink_gbps=uplink.number() if uplink else None,
            oversubscription=over.number() if over else 1.0,
            rails=ints.get("rails", 0),
            devices_per_server=ints.get("devices_per_server", 8),
        )
    except InputError as err:
        raise spec.error(err.reason) from None
    topo.source = source
    return topo


def _switch(node: Field) -> Switch:
    _check_keys(node, SWITCH_KEYS)
    parent = node.opt("parent")
    uplink = node.opt("uplink_gbps")
    over = node.opt("oversubscription")
    return Switch(
        name=node.key("name").text(),
        tier=node.key("tier").integer(minimum=1),
        parent=parent.text() if parent else None,
        uplink_gbps=uplink.number() if uplink else None,
        oversubscription=over.number() if over else 1.0,
    )


def _server(node: Field, topo: Topology) -> None:
    _check_keys(node, SERVER_KEYS)
    name = node.key("name").text()
    if name in topo.server_leaf:
        raise node.child("name", name).error(f"server {name!r} is listed twice")
    if name in topo.aliases:
        raise node.child("name", name).error(f"server {name!r} is already an alias of {topo.aliases[name]!r}")
    leaf = node.opt("leaf")
    leaves = node.opt("leaves")
    if leaf is None and leaves is None:
        raise node.error(f"server {name!r} needs `leaf` (its switch) or `leaves` (switch per device)")
    for target in [leaf] + ([item for _, item in leaves.entries()] if leaves else []):
        if target is None:
            continue
        sw = topo.switches.get(target.text())
        if sw is None:
            raise target.error(f"switch {target.text()!r} is not listed under `switches`")
        if sw.tier != 1:
            raise target.error(f"switch {sw.name!r} is tier {sw.tier}; servers attach to tier-1 switches")
    if leaves is not None:
        devices: dict[int, str] = {}
        for key, item in leaves.entries():
            device = Field(key, item.path, item.source).integer(minimum=0)
            if device in devices:
                raise item.error(f"device {device} is listed twice")
            devices[device] = item.text()
        if not devices:
            raise leaves.error("must list at least one device")
        for device, device_leaf in sorted(devices.items()):
            topo.attach_device(name, device, device_leaf)
    if leaf is not None:
        topo.server_leaf[name] = leaf.text()
    aliases = node.opt("aliases")
    if aliases is not None:
        for item in aliases.items():
            alias = item.text()
            try:
                topo.register_alias(alias, name)
            except InputError as err:
                raise item.error(err.reason) from None
    slot = node.opt("slice")
    if slot is not None:
        topo.slice_ids[name] = slot.integer(minimum=0)


def topology_from_yaml(data: Any, source: str = "") -> Topology:
    """Build a topology from parsed YAML data in the project's format."""
    root = Field(data, "", source)
    root.mapping()
    _check_keys(root, TOP_KEYS)
    kind = root.opt("kind")
    if kind is not None and kind.text() != YAML_KIND:
        raise kind.error(f"expected {YAML_KIND!r}, got {kind.value!r}")
    generate = root.opt("generate")
    if generate is not None:
        if root.has("switches") or root.has("servers"):
            raise generate.error("`generate` replaces `switches` and `servers`; give one or the other")
        topo = _generate(generate, source)
    else:
        topo = Topology(source=source)
        switches = root.key("switches", fix="list the switches, e.g. - {name: leaf0, tier: 1}")
        for node in switches.items():
            sw = _switch(node)
            if sw.name in topo.switches:
                raise node.child("name", sw.name).error(f"switch {sw.name!r} is listed twice")
            topo.switches[sw.name] = sw
        for node in switches.items():
            parent = node.opt("parent")
            if parent is None:
                continue
            above = topo.switches.get(parent.text())
            if above is None:
                raise parent.error(f"switch {parent.text()!r} is not listed under `switches`")
            tier = topo.switches[node.key("name").text()].tier
            if above.tier != tier + 1:
                raise parent.error(
                    f"parent {above.name!r} is tier {above.tier}; "
                    f"a tier-{tier} switch needs a tier-{tier + 1} parent"
                )
        for node in root.key("servers").items():
            _server(node, topo)
    tiers = root.opt("tiers")
    if tiers is not None:
        topo.tier_names.update(_tier_names(tiers))
    topo.validate()
    return topo


def load_yaml_topology(text: str, source: str = "") -> Topology:
    return topology_from_yaml(parse_document(text, source), source)


def dump_topology_yaml(topology: Topology) -> str:
    """The topology as YAML text in the project's format (block style, switches before servers)."""
    import yaml  # here: reading a topology needs no YAML writer

    return yaml.safe_dump(topology.to_yaml_data(), sort_keys=False, default_flow_style=None, width=110)
