"""A job's Volcano `networkTopology` as one JobSpec field: ``MODE:TIER`` text, e.g. ``hard:1``.

Volcano (HyperNode scheduling) keeps a gang inside one HyperNode of tier <= ``highestTierAllowed``: tier 1
is a leaf switch's servers, so ``hard:1`` puts every pod of the job under one leaf (no ring edge crosses a
leaf) or leaves it pending; ``soft`` prefers that and places the gang anyway when no HyperNode holds it.
The text form is what the flag, the form and the spec file hold; `to_volcano` / `from_volcano` are the
Volcano Job's ``spec.networkTopology`` object and back (source: volcano-sh/apis,
the batch/v1alpha1 Job's `NetworkTopologySpec`: mode, highestTierAllowed, highestTierName).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ranktable.errors import InputError

MODES = ("hard", "soft")
PATTERN = r"^$|^(hard|soft):[1-9]$"
HELP = (
    "Volcano networkTopology as MODE:TIER: hard:1 keeps every pod under one leaf switch (tier-1 HyperNode) "
    "or waits, soft:1 prefers that; TIER is the highest HyperNode tier the gang may span (empty: none)"
)
_FIX = "write MODE:TIER with MODE hard or soft and TIER 1-9, e.g. hard:1 (or leave it empty)"


@dataclass(frozen=True)
class NetworkTopology:
    mode: str
    highest_tier: int

    @property
    def text(self) -> str:
        return f"{self.mode}:{self.highest_tier}"

    def to_volcano(self) -> dict[str, Any]:
        return {"mode": self.mode, "highestTierAllowed": self.highest_tier}


def parse_network_topology(text: str, where: str = "network_topology") -> NetworkTopology | None:
    """``hard:1`` -> NetworkTopology("hard", 1); "" -> None; anything else an error naming `where`."""
    value = text.strip()
    if not value:
        return None
    mode, colon, tier = value.partition(":")
    if mode not in MODES or not colon or not tier.isdigit() or not 1 <= int(tier) <= 9:
        raise InputError(f"{text!r} is not a network topology", where=where, fix=_FIX)
    return NetworkTopology(mode, int(tier))


def checked_network_topology(value: Any, where: str) -> str:
    """The JobSpec field's check: the text, normalised ("" for none)."""
    if not isinstance(value, str):
        raise InputError(f"expected text, got {type(value).__name__}", where=where, fix=_FIX)
    parsed = parse_network_topology(value, where)
    return parsed.text if parsed else ""


def from_volcano(obj: Any, where: str = "Job.spec.networkTopology") -> str:
    """A Volcano Job's ``spec.networkTopology`` as the field's text ("" when absent)."""
    if not obj:
        return ""
    if not isinstance(obj, dict):
        raise InputError("expected an object", where=where, fix="{mode: hard, highestTierAllowed: 1}")
    if obj.get("highestTierName"):
        raise InputError(
            "highestTierName is not read back into a job spec",
            where=f"{where}.highestTierName",
            fix="use highestTierAllowed (the tier number) instead",
        )
    mode, tier = obj.get("mode", "hard"), obj.get("highestTierAllowed", 1)
    return checked_network_topology(f"{mode}:{tier}", where)
