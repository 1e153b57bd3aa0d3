"""Route planning: renumber a rank table so its ring follows the switch tree (and stable replanning)."""

from ranktable.plan.placement import Placement, natural_key, place, ring_crossings
from ranktable.plan.planner import PlanResult, ReplanGain, plan_routes, renumber, require_plannable

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
