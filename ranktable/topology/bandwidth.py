"""Every tier's uplink figures, whatever file described the tree: the file's, else a documented default,
and ``--tier-bandwidth`` over both.

Only HyperNodes (annotations), Slurm (``LinkSpeed``) and our YAML carry uplink figures; MindCluster's
``basic-tor-node-cm``, the platform's ``ranktable_tor.json`` and node labels carry none. Left at 1:1, a
tree read from those made every crossing free, so the same placement planned 1.00x from them and 1.60x
from HyperNodes. The default is a job's share of its leaf's uplinks in a shared Lite pool, 4:1 — the
figure the simulated pool publishes on its HyperNodes (docs/simulated-pool.md); it is a modelling
choice (real pools publish none), so every figure assumed is said in the plan's warnings.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ranktable.errors import InputError
from ranktable.topology.model import Topology

# Tier -> oversubscription of that tier's switches' uplinks, when the file gives no figure.
DEFAULT_OVERSUBSCRIPTION: dict[int, float] = {1: 4.0}
DEFAULT_SOURCE = "the shared-pool default, docs/planning.md"
MAX_RATIO = 1024.0
MAX_GBPS = 1e6

_SETTING = re.compile(
    r"^\s*(\d+)\s*=\s*(?:(\d+(?:\.\d+)?)\s*:\s*1|(\d+(?:\.\d+)?)\s*(?:gbps|gb/s|g)?)\s*$", re.I
)


def parse_tier_bandwidth(text: str) -> tuple[int, float | None, float | None]:
    """``TIER=R:1`` (uplinks oversubscribed R:1) or ``TIER=GBPS`` (uplink Gb/s): (tier, ratio, gbps)."""
    found = _SETTING.match(text)
    if found is None:
        raise InputError(
            f"expected TIER=R:1 or TIER=GBPS, got {text!r}",
            where="--tier-bandwidth",
            fix="e.g. --tier-bandwidth 1=4:1 (leaf uplinks 4:1) or --tier-bandwidth 1=400 (400 Gb/s)",
        )
    tier = int(found.group(1))
    ratio = float(found.group(2)) if found.group(2) else None
    gbps = float(found.group(3)) if found.group(3) else None
    if (
        tier < 1
        or (ratio is not None and not 1 <= ratio <= MAX_RATIO)
        or (gbps is not None and not 0 < gbps <= MAX_GBPS)
    ):
        raise InputError(
            f"out of range: {text!r}",
            where="--tier-bandwidth",
            fix=f"tiers start at 1; ratios 1..{MAX_RATIO:g}:1; Gb/s 0..{MAX_GBPS:g}",
        )
    return tier, ratio, gbps


def give_tier_bandwidths(
    topology: Topology, settings: list[tuple[int, float | None, float | None]] | None = None
) -> None:
    """Give every switch's uplinks (its way out, parent or not) a figure: ``settings`` (``--tier-bandwidth``)
    first, then the file's, then the default; each default or setting used is said in the warnings."""
    chosen = {tier: (ratio, gbps) for tier, ratio, gbps in settings or []}
    assumed: dict[int, int] = {}
    for name, switch in list(topology.switches.items()):
        if switch.tier in chosen:
            ratio, gbps = chosen[switch.tier]
            topology.switches[name] = replace(
                switch, oversubscription=ratio or 1.0, uplink_gbps=gbps if ratio is None else None
            )
            continue
        if switch.uplink_gbps is not None or switch.oversubscription != 1.0:
            continue  # the file said
        default = DEFAULT_OVERSUBSCRIPTION.get(switch.tier)
        if default is not None:
            topology.switches[name] = replace(switch, oversubscription=default)
            assumed[switch.tier] = assumed.get(switch.tier, 0) + 1
    for tier, count in sorted(assumed.items()):
        label = topology.tier_names.get(tier) or {1: "leaf", 2: "spine"}.get(tier, f"tier {tier}")
        topology.warnings.append(
            f"tier {tier} ({label}) uplinks of {count} switch(es): "
            f"{DEFAULT_OVERSUBSCRIPTION[tier]:g}:1 assumed ({DEFAULT_SOURCE}; the topology gives no "
            f"figure); --tier-bandwidth {tier}=R:1 or {tier}=GBPS sets it"
        )
    for tier, (ratio, gbps) in sorted(chosen.items()):
        figure = f"{ratio:g}:1" if ratio is not None else f"{gbps:g} Gb/s"
        topology.warnings.append(f"tier {tier} uplinks: {figure} (--tier-bandwidth)")
