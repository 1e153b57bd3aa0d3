"""The network tree every loader produces and the planner, cost model and renderer read.

Tier 1 switches are the ones servers (or single NPUs) attach to (leaf / ToR), tier 2 sits above them
(spine), and so on. A server usually hangs off one leaf; on rail-optimised fabrics each device of a
server may hang off a different leaf (``device_leaf``). Servers are known by one canonical name and
any number of aliases (node name, InternalIP, hostname) so a rank table's ``server_id`` finds them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ranktable.errors import InputError


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
            sw = self.switches.get(leaf)
            if sw is None:
                raise InputError(f"server {server!r} attaches to unknown switch {leaf!r}", where=where)
            if sw.tier != 1:
                raise InputError(
                    f"server {server!r} attaches to {leaf!r} of tier {sw.tier}; servers attach to tier 1",
                    where=where,
                )

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
