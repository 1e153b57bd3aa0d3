"""Which free nodes the scheduler will give a gang, in pod-index order, before it is submitted.

The layout of a job is its pods' nodes in rank order, and pod i gets rank block i, so the layout before
submit is only as good as this guess. Two node choices are modelled:

- `SPREAD_BY_LEAF`, the simulated pool's scheduler: pod by pod (in index order), the fitting node under
  the leaf holding the fewest pods of the gang so far, ties by node name. Deterministic: one prediction.
- `RANDOM_AMONG_EQUALS`, Volcano's allocate action: it scores fitting nodes (nodeorder, binpack: CPU and
  memory, not NPUs) and takes one at random among the best (`SelectBestNodeAndScore`). Whole free nodes
  score alike, so any free node may come next: the layout is known only when every choice is the same
  (one pod, or every candidate under one leaf); otherwise the forecast is a range, its best case (leaf
  by leaf) and worst case (alternating leaves).

A job's `networkTopology` (JobSpec ``network_topology``, e.g. ``hard:1``) with tier 1 keeps the gang under
one leaf (a tier-1 HyperNode): only leaves that hold the whole gang are candidates, the smallest first (the
simulated scheduler tries HyperNodes by tier, size and name); ``hard`` with none waits, ``soft`` with none
places the gang as without it. Which leaf Volcano picks is its choice, but every choice has no leaf
crossing, so the layout is known. Tier 2 and above span the spine: no confinement under a two-tier tree.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

SPREAD_BY_LEAF = "spread-by-leaf"
RANDOM_AMONG_EQUALS = "random-among-equals"
POLICIES = (SPREAD_BY_LEAF, RANDOM_AMONG_EQUALS)
# Volcano's scheduler configuration, where its Helm chart puts it; the simulated pool annotates its copy
# with its node choice (a real Volcano's has no such annotation: its choice is RANDOM_AMONG_EQUALS)
SCHEDULER_NAMESPACE = "volcano-system"
SCHEDULER_CONFIGMAP = "volcano-scheduler-configmap"
SCHEDULER_CONF_KEY = "volcano-scheduler.conf"
NODE_CHOICE_ANNOTATION = "sim.ranktable.io/node-choice"


@dataclass(frozen=True)
class PlacementForecast:
    """`cases`: (label, node names in pod-index order); one "predicted" case when exact, else best/worst."""

    exact: bool
    policy: str
    reason: str
    cases: list[tuple[str, list[str]]] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "exact": self.exact,
            "policy": self.policy,
            "reason": self.reason,
            "cases": [{"label": label, "nodes": nodes} for label, nodes in self.cases],
        }


def forecast_placement(
    free: dict[str, int],
    leaf_of: dict[str, str],
    pods: int,
    npus: int,
    policy: str,
    network_topology: tuple[str, int] | None = None,
) -> PlacementForecast:
    """The nodes `pods` pods of `npus` NPUs each get, one pod per node (the jobs' hostname anti-affinity).

    `free`: free NPUs per candidate node (already filtered by node selector); `leaf_of`: node -> leaf;
    `network_topology`: the job's (mode, highest tier allowed), if any.
    Raises ValueError when the gang does not fit (the caller says what to do).
    """
    fitting = sorted(name for name, count in free.items() if count >= npus)
    if len(fitting) < pods:
        raise ValueError(f"{len(fitting)} free node(s) fit a pod of {npus} NPUs; the gang needs {pods}")
    if network_topology is not None and network_topology[1] == 1:
        mode = network_topology[0]
        sizes = Counter(leaf_of.get(name, "") for name in leaf_of)
        by_leaf = _by_leaf(fitting, leaf_of)
        holding = sorted(
            (leaf for leaf, nodes in by_leaf.items() if len(nodes) >= pods), key=lambda x: (sizes[x], x)
        )
        if holding:
            leaf = holding[0]
            chosen = by_leaf[leaf][:pods]
            others = (
                "" if len(holding) == 1 else f" (the scheduler may pick another of {len(holding)} leaves)"
            )
            why = f"networkTopology {mode}:1 keeps the gang under one leaf: {leaf}{others}, no leaf crossing"
            return PlacementForecast(True, policy, why, [("predicted", chosen)])
        if mode == "hard":
            raise ValueError(
                f"no leaf has {pods} free node(s) that fit a pod of {npus} NPUs (networkTopology hard:1)"
            )
        prefix = "no leaf holds the gang, so networkTopology soft:1 places it anyway; "
        found = forecast_placement(free, leaf_of, pods, npus, policy)
        return PlacementForecast(found.exact, found.policy, prefix + found.reason, found.cases)
    if policy == SPREAD_BY_LEAF:
        order = _spread_by_leaf(fitting, leaf_of, pods)
        return PlacementForecast(
            True, policy, "the simulated pool's scheduler spreads a gang over leaves", [("predicted", order)]
        )
    by_leaf = _by_leaf(fitting, leaf_of)
    if pods == 1 or len(by_leaf) == 1:
        why = "one pod" if pods == 1 else "every free node that fits is under one leaf"
        return PlacementForecast(
            True, policy, f"{why}: any choice gives this layout", [("predicted", fitting[:pods])]
        )
    return PlacementForecast(
        False,
        policy,
        "Volcano picks at random among equally scored nodes: the layout is known once the job is scheduled",
        [("best", _leaf_by_leaf(by_leaf, pods)), ("worst", _alternating(by_leaf, pods))],
    )


def _by_leaf(nodes: list[str], leaf_of: dict[str, str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name in nodes:
        out.setdefault(leaf_of.get(name, ""), []).append(name)
    return out


def _spread_by_leaf(fitting: list[str], leaf_of: dict[str, str], pods: int) -> list[str]:
    """The simulated scheduler's choice, pod by pod (sim/controllers/scheduler.py `_place`)."""
    left, counts, order = list(fitting), Counter[str](), []
    for _ in range(pods):
        node = min(left, key=lambda n: (counts[leaf_of.get(n, "")], n))
        left.remove(node)
        counts[leaf_of.get(node, "")] += 1
        order.append(node)
    return order


def _leaf_by_leaf(by_leaf: dict[str, list[str]], pods: int) -> list[str]:
    """Fullest leaves first, each as one block: the fewest leaf changes around the ring."""
    leaves = sorted(by_leaf, key=lambda name: (-len(by_leaf[name]), name))
    return [n for leaf in leaves for n in by_leaf[leaf]][:pods]


def _alternating(by_leaf: dict[str, list[str]], pods: int) -> list[str]:
    """One node per leaf in turn: every ring edge changes leaf while two leaves still have nodes."""
    queues = [list(by_leaf[leaf]) for leaf in sorted(by_leaf)]
    order: list[str] = []
    while len(order) < pods:
        for queue in queues:
            if queue and len(order) < pods:
                order.append(queue.pop(0))
    return order
