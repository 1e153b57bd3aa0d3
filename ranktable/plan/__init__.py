"""Route planning: renumber a rank table so its ring follows the switch tree (and stable replanning).

Names are imported on first use (PEP 562): a module that needs only `plan.forecast`'s constants (the
cluster client, a cold `ranktable job list`) does not import the planner and numpy (#28).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ranktable.lazy import lazy_exports

if TYPE_CHECKING:
    from ranktable.plan.placement import Placement, natural_key, place, ring_crossings
    from ranktable.plan.planner import PlanResult, ReplanGain, plan_routes, renumber, require_plannable

_HOMES = {
    "Placement": "placement",
    "natural_key": "placement",
    "place": "placement",
    "ring_crossings": "placement",
    "PlanResult": "planner",
    "ReplanGain": "planner",
    "plan_routes": "planner",
    "renumber": "planner",
    "require_plannable": "planner",
}

__all__ = [
    "Placement",
    "PlanResult",
    "ReplanGain",
    "natural_key",
    "place",
    "plan_routes",
    "renumber",
    "require_plannable",
    "ring_crossings",
]


__getattr__ = lazy_exports(__name__, _HOMES, globals())
