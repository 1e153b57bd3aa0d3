"""Regular switch trees of any size, for benchmarks, tests, the demo and the simulated pool.

Servers are spread over leaves in contiguous blocks, leaves over spines, spines over cores, as evenly
as the counts allow; server ids are consecutive IPv4 addresses from ``ip_base`` (what a rank table's
``server_id`` usually is), with node names ``node-00000`` ... as aliases.
"""

from __future__ import annotations

import ipaddress

from ranktable.errors import InputError
from ranktable.limits import MAX_DEVICES_PER_SERVER, MAX_SERVERS
from ranktable.topology.model import Switch, Topology


def _block(index: int, count: int, groups: int) -> int:
    """Which of `groups` contiguous, near-equal blocks item `index` of `count` falls in."""
    return index * groups // count


def _names(prefix: str, count: int) -> list[str]:
    width = max(2, len(str(count - 1)))
    return [f"{prefix}-{i:0{width}d}" for i in range(count)]


def synthetic_topology(
    servers: int,
    leaves: int,
    spines: int = 0,
    cores: int = 0,
    *,
    ip_base: str = "10.0.0.1",
    uplink_gbps: float | None = None,
    oversubscription: float = 1.0,
    rails: int = 0,
    devices_per_server: int = 8,
    node_names: bool = True,
) -> tuple[Topology, list[str]]:
    """A leaf/spine/core tree and its server ids in topology order (leaf by leaf).

    ``rails=R`` (R > 0) builds a rail-optimised fabric: leaves come in groups of R, and device d of a
    server attaches to leaf ``d % R`` of its group. Shuffle the returned ids to get a pod order that
    knows nothing of switches.
    """
    where = "synthetic topology"
    if servers < 1 or leaves < 1:
        raise InputError("servers and leaves must be at least 1", where=where)
    if servers > MAX_SERVERS or devices_per_server > MAX_DEVICES_PER_SERVER:
        raise InputError(
            f"{servers:,} servers of {devices_per_server} devices is over the limit of {MAX_SERVERS:,} "
            f"servers of at most {MAX_DEVICES_PER_SERVER} devices",
            where=where,
        )
    if spines < 0 or cores < 0 or rails < 0:
        raise InputError("spines, cores and rails must not be negative", where=where)
    if cores and not spines:
        raise InputError("cores need spines below them", where=where)
    if spines > leaves or (cores and cores > spines):
        raise InputError("each tier needs at least as many switches as the tier above it", where=where)
    if rails and (leaves % rails or devices_per_server < rails):
        raise InputError(
            f"rails={rails} needs leaves divisible by it and at least {rails} devices per server", where=where
        )
    groups = leaves // rails if rails else leaves
    if groups > servers:
        raise InputError(f"{groups} leaf groups for {servers} servers would leave leaves empty", where=where)
    try:
        first = ipaddress.IPv4Address(ip_base)
    except ValueError:
        raise InputError(f"ip_base {ip_base!r} is not an IPv4 address", where=where) from None
    if int(first) + servers - 1 > int(ipaddress.IPv4Address("255.255.255.255")):
        raise InputError(f"{servers} addresses from {ip_base} run past 255.255.255.255", where=where)

    topo = Topology(source=where, tier_names={1: "leaf"})
    core_names = _names("core", cores) if cores else []
    spine_names = _names("spine", spines) if spines else []
    leaf_names = _names("leaf", leaves)
    for name in core_names:
        topo.add_switch(Switch(name, 3))
    for i, name in enumerate(spine_names):
        parent = core_names[_block(i, spines, cores)] if cores else None
        topo.add_switch(Switch(name, 2, parent, uplink_gbps, oversubscription))
    for i, name in enumerate(leaf_names):
        group = i // rails if rails else i
        parent = spine_names[_block(group, groups, spines)] if spines else None
        topo.add_switch(Switch(name, 1, parent, uplink_gbps, oversubscription))
    if spines:
        topo.tier_names[2] = "spine"
    if cores:
        topo.tier_names[3] = "core"

    ids = [str(first + i) for i in range(servers)]
    node_width = max(5, len(str(servers - 1)))
    for i, server in enumerate(ids):
        group = _block(i, servers, groups)
        if rails:
            for device in range(devices_per_server):
                topo.attach_device(server, device, leaf_names[group * rails + device % rails])
        else:
            topo.attach_server(server, leaf_names[group])
        if node_names:
            topo.aliases[f"node-{i:0{node_width}d}"] = server
    topo.validate()
    return topo, ids
