"""The network tree every loader produces and the planner, cost model and renderer read.

Tier 1 switches are the ones servers (or single NPUs) attach to (leaf / ToR), tier 2 sits above them
(spine), and so on. A server usually hangs off one leaf; on rail-optimised fabrics each device of a
server may hang off a different leaf (``device_leaf``). Servers are known by one canonical name and
any number of aliases (node name, InternalIP, hostname) so a rank table's ``server_id`` finds them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ranktable.errors import InputError

YAML_KIND = "RanktableTopology"
DEFAULT_TIER_NAMES = {1: "leaf", 2: "spine", 3: "core"}


@dataclass(frozen=True)
class Switch:
    """One switch: its tier (1 = leaf), the switch above it, and optional uplink figures."""

    name: str
    tier: int
    parent: str | None = None
    uplink_gbps: float | None = None
    oversubscription: float = 1.0


@dataclass
class Topology:
    """A tree of switches with servers (and optionally single devices) attached to leaves."""

    switches: dict[str, Switch] = field(default_factory=dict)
    server_leaf: dict[str, str] = field(default_factory=dict)
    device_leaf: dict[tuple[str, int], str] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    source: str = ""
    # Optional extras (added after the first release of this model; loaders fill them when the source
    # says): tier number -> name ("tor", "spine", a HyperNode tierName), and a server's position under
    # its leaf as the source gives it (MindCluster `slice_id`), which a planner may use to order servers
    # within a leaf.
    tier_names: dict[int, str] = field(default_factory=dict)
    slice_ids: dict[str, int] = field(default_factory=dict)
    # What a loader accepted but the user should know (a HyperNode naming an undefined member, a
    # MindCluster tor_count that does not match); the planner reports them with its own warnings.
    warnings: list[str] = field(default_factory=list)

    # -- building -------------------------------------------------------------------------------
    def add_switch(self, switch: Switch) -> None:
        existing = self.switches.get(switch.name)
        if existing is not None and existing != switch:
            raise InputError(
                f"switch {switch.name!r} is declared twice with different settings",
                where=self.source or None,
            )
        self.switches[switch.name] = switch

    def attach_server(self, server: str, leaf: str, aliases: Iterable[str] = ()) -> None:
        self.server_leaf[server] = leaf
        for alias in aliases:
            if alias and alias != server:
                self.aliases[alias] = server

    def attach_device(self, server: str, device_id: int, leaf: str) -> None:
        self.device_leaf[(server, device_id)] = leaf
        self.server_leaf.setdefault(server, leaf)

    def register_alias(self, alias: str, server: str, where: str | None = None) -> None:
        """Add one alias, refusing one that already names another server (a silent overwrite would
        send a rank-table server to the wrong leaf)."""
        if not alias or alias == server:
            return
        if alias in self.server_leaf:
            raise InputError(
                f"alias {alias!r} of server {server!r} is itself the name of another server",
                where=where or self.source or None,
            )
        existing = self.aliases.get(alias)
        if existing is not None and existing != server:
            raise InputError(
                f"alias {alias!r} names two servers: {existing!r} and {server!r}",
                where=where or self.source or None,
            )
        self.aliases[alias] = server

    def validate(self) -> None:
        """Check the tree is well formed: parents exist, tiers rise by one, leaves are tier 1."""
        where = self.source or None
        for sw in self.switches.values():
            if sw.tier < 1:
                raise InputError(f"switch {sw.name!r} has tier {sw.tier}; tiers start at 1", where=where)
            if sw.parent is not None:
                parent = self.switches.get(sw.parent)
                if parent is None:
                    raise InputError(
                        f"switch {sw.name!r} names parent {sw.parent!r}, which is not declared", where=where
                    )
                if parent.tier != sw.tier + 1:
                    raise InputError(
                        f"switch {sw.name!r} (tier {sw.tier}) has parent {parent.name!r} of tier "
                        f"{parent.tier}; a parent must be exactly one tier above",
                        where=where,
                    )
            if sw.oversubscription <= 0:
                raise InputError(f"switch {sw.name!r} has oversubscription <= 0", where=where)
        for server, leaf in list(self.server_leaf.items()) + [
            (f"{s}/device {d}", leaf) for (s, d), leaf in self.device_leaf.items()
        ]:
            leaf_switch = self.switches.get(leaf)
            if leaf_switch is None:
                raise InputError(f"server {server!r} attaches to unknown switch {leaf!r}", where=where)
            if leaf_switch.tier != 1:
                raise InputError(
                    f"server {server!r} attaches to {leaf!r} of tier {leaf_switch.tier}; "
                    "servers attach to tier 1",
                    where=where,
                )
        for alias, server in self.aliases.items():
            if server not in self.server_leaf:
                raise InputError(f"alias {alias!r} points to unknown server {server!r}", where=where)
            if alias in self.server_leaf and alias != server:
                raise InputError(f"{alias!r} is both a server and an alias of server {server!r}", where=where)

    # -- queries --------------------------------------------------------------------------------
    @property
    def tier_count(self) -> int:
        return max((sw.tier for sw in self.switches.values()), default=0)

    def resolve(self, server_id: str, *more_ids: str | None) -> str | None:
        """The canonical server name for a rank-table server (tries server_id, then host_ip etc.)."""
        for key in (server_id, *more_ids):
            if not key:
                continue
            if key in self.server_leaf:
                return key
            if key in self.aliases:
                return self.aliases[key]
        return None

    def leaf_of(self, server: str, device_id: int | None = None) -> str | None:
        if device_id is not None and (server, device_id) in self.device_leaf:
            return self.device_leaf[(server, device_id)]
        return self.server_leaf.get(server)

    def leaves_of(self, server: str) -> tuple[str, ...]:
        """Every leaf a server's devices use, sorted (one entry unless rail-optimised)."""
        rails = sorted({leaf for (s, _), leaf in self.device_leaf.items() if s == server})
        if rails:
            return tuple(rails)
        leaf = self.server_leaf.get(server)
        return (leaf,) if leaf else ()

    def ancestor(self, switch: str, tier: int) -> str | None:
        """The tier-`tier` switch above (or equal to) `switch`; None if the tree is shorter."""
        sw: Switch | None = self.switches.get(switch)
        while sw is not None and sw.tier < tier:
            sw = self.switches.get(sw.parent) if sw.parent else None
        return sw.name if sw is not None and sw.tier == tier else None

    def path(self, switch: str) -> list[str]:
        """Switch names from `switch` up to the root."""
        out: list[str] = []
        sw = self.switches.get(switch)
        while sw is not None:
            out.append(sw.name)
            sw = self.switches.get(sw.parent) if sw.parent else None
        return out

    def children(self, switch: str) -> list[str]:
        return sorted(name for name, sw in self.switches.items() if sw.parent == switch)

    def tier_name(self, tier: int) -> str:
        """A display name for a tier: the source's own name, else leaf / spine / core / tier N."""
        return self.tier_names.get(tier) or DEFAULT_TIER_NAMES.get(tier) or f"tier {tier}"

    def switches_at(self, tier: int) -> list[str]:
        return sorted(name for name, sw in self.switches.items() if sw.tier == tier)

    def servers(self) -> list[str]:
        """Canonical server names, sorted."""
        return sorted(self.server_leaf)

    def servers_of(self, leaf: str) -> list[str]:
        """Servers with at least one device (or their primary attachment) on `leaf`, sorted."""
        found = {s for s, lf in self.server_leaf.items() if lf == leaf}
        found.update(s for (s, _), lf in self.device_leaf.items() if lf == leaf)
        return sorted(found)

    def servers_by_leaf(self) -> dict[str, list[str]]:
        """Every leaf -> its servers (as ``servers_of``), in one pass: for drawing large pools."""
        found: dict[str, set[str]] = {leaf: set() for leaf in self.switches_at(1)}
        for server, leaf in self.server_leaf.items():
            found.setdefault(leaf, set()).add(server)
        for (server, _), leaf in self.device_leaf.items():
            found.setdefault(leaf, set()).add(server)
        return {leaf: sorted(servers) for leaf, servers in sorted(found.items())}

    def aliases_of(self, server: str) -> list[str]:
        return sorted(alias for alias, target in self.aliases.items() if target == server)

    # -- export ---------------------------------------------------------------------------------
    def to_yaml_data(self) -> dict[str, Any]:
        """This topology in the project's YAML format (plain data; dump it with any YAML library).

        Loading the result with ``topology_from_yaml`` gives back an equal topology (``source`` aside).
        """
        data: dict[str, Any] = {"kind": YAML_KIND}
        if self.tier_names:
            tiers = sorted(self.tier_names)
            if tiers == list(range(1, len(tiers) + 1)):
                data["tiers"] = [self.tier_names[t] for t in tiers]
            else:
                data["tiers"] = {t: self.tier_names[t] for t in tiers}
        switches: list[dict[str, Any]] = []
        for sw in sorted(self.switches.values(), key=lambda s: (-s.tier, s.name)):
            entry: dict[str, Any] = {"name": sw.name, "tier": sw.tier}
            if sw.parent is not None:
                entry["parent"] = sw.parent
            if sw.uplink_gbps is not None:
                entry["uplink_gbps"] = sw.uplink_gbps
            if sw.oversubscription != 1.0:
                entry["oversubscription"] = sw.oversubscription
            switches.append(entry)
        data["switches"] = switches
        aliases: dict[str, list[str]] = {}
        for alias, target in self.aliases.items():
            aliases.setdefault(target, []).append(alias)
        rails: dict[str, dict[int, str]] = {}
        for (server, device), leaf in self.device_leaf.items():
            rails.setdefault(server, {})[device] = leaf
        servers: list[dict[str, Any]] = []
        for name in sorted(self.server_leaf):
            entry = {"name": name}
            devices = rails.get(name)
            if devices:
                ordered = dict(sorted(devices.items()))
                entry["leaves"] = ordered
                if self.server_leaf[name] != next(iter(ordered.values())):
                    entry["leaf"] = self.server_leaf[name]
            else:
                entry["leaf"] = self.server_leaf[name]
            if name in self.slice_ids:
                entry["slice"] = self.slice_ids[name]
            if name in aliases:
                entry["aliases"] = sorted(aliases[name])
            servers.append(entry)
        data["servers"] = servers
        return data
