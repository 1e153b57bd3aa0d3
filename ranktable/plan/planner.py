"""Route planning: renumber ranks so the ring follows the switch tree.

Servers are sorted by their position from the top tier down (switch names in natural order), keeping
the given rank order inside a group. Every tier-k group then forms one contiguous block, so the ring
over the planned server order crosses tier-k boundaries exactly once per tier-k switch used (0 if one),
which is the least any order can do. Sorting makes it O(n log n) and deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ranktable.errors import InputError
from ranktable.hccl.bulk import gc_paused
from ranktable.hccl.columns import RankColumns, lazy_columns
from ranktable.hccl.model import STATUS_COMPLETED, Device, RankTable, Server, SuperPod
from ranktable.hccl.validate import validate_rank_table
from ranktable.plan.placement import Placement, natural_key, place, ring_crossings
from ranktable.plan.stable import stable_order
from ranktable.topology.model import Topology


@dataclass
class ReplanGain:
    """Stable mode: how the kept layout compares with planning from scratch."""

    kept_servers: int
    moved_servers: list[str]  # surviving servers whose ranks had to change (job shrank)
    new_servers: list[str]
    crossings_per_tier: list[int]  # the stable layout
    full_crossings_per_tier: list[int]  # what a full replan reaches
    full_plan: RankTable

    @property
    def worthwhile(self) -> bool:
        return self.full_crossings_per_tier != self.crossings_per_tier

    def describe(self) -> str:
        if not self.worthwhile:
            return "a full replan would not reduce ring crossings"
        tiers = ", ".join(
            f"tier {k}: {a} -> {b}"
            for k, (a, b) in enumerate(
                zip(self.crossings_per_tier, self.full_crossings_per_tier, strict=True), 1
            )
            if a != b
        )
        return f"a full replan would change ring crossings ({tiers}) but renumber surviving servers"


@dataclass
class PlanResult:
    """The planned table and everything a launcher or a report needs about it."""

    planned: RankTable
    server_order: list[int]  # indices into the given table's server_list, in planned order
    node_rank: dict[str, int]  # server_id -> new node rank (RANK_AFTER_ACC / NODE_RANK)
    old_ranks: Sequence[int] | np.ndarray  # per new rank, the rank it had in the given table
    warnings: list[str] = field(default_factory=list)
    unknown_servers: list[str] = field(default_factory=list)
    crossings_per_tier: list[int] = field(default_factory=list)  # planned ring, tier 1 first
    given_crossings_per_tier: list[int] = field(default_factory=list)
    switches_per_tier: list[int] = field(default_factory=list)  # the bound the planner reaches
    stable: bool = False
    replan: ReplanGain | None = None
    placement: Placement | None = None  # of the given table, for costing without placing again

    @cached_property
    def rank_mapping(self) -> str:
        """ "newRank-oldRank,..." in new-rank order (built when asked: 65,536 pairs take a while)."""
        return mapping_text(self.old_ranks)

    def first_rank(self, server_id: str) -> int:
        """The lowest rank id of a server in the planned table (RANK_ID of its local device 0)."""
        server = self.planned.server(server_id)
        if server is None or not server.devices:
            raise InputError(f"server {server_id!r} is not in the planned table", where="--server-id")
        return min(d.rank_id for d in server.devices)


def require_plannable(table: RankTable, what: str = "rank table") -> None:
    """Planning a broken or unfinished table would hide the defect; refuse with the first problem."""
    if table.status != STATUS_COMPLETED:
        raise InputError(
            f"{what} status is {table.status!r}, not completed",
            where="status",
            fix="wait for the platform to fill it (`ranktable wait FILE`)",
        )
    problems = validate_rank_table(table)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InputError(
            f"{what} is invalid: {problems[0].message}{more}",
            where=problems[0].path or None,
            fix="run `ranktable validate FILE` for the full list",
        )


def topology_order(placement: Placement, slice_ids: dict[str, int] | None = None) -> list[int]:
    """Server indices sorted top tier first; inside a leaf group by the source's slot number
    (MindCluster `slice_id`, as the Ascend scheduler orders a ToR) when known, else in given order;
    unknown servers last in their given order."""
    count = len(placement.names)
    position = np.empty(count, dtype=np.int64)
    position[np.asarray(placement.rank_order, dtype=np.int64)] = np.arange(count, dtype=np.int64)
    slots = slice_ids or {}
    unknown, path_rank = _path_ranks(placement)
    slot = np.full(count, np.inf)
    if slots:
        slot[:] = [slots.get(name, np.inf) if name else np.inf for name in placement.names]
    slot[unknown] = 0
    return [int(i) for i in np.lexsort((position, slot, path_rank, unknown))]


def _pod_per_server(pods: list[SuperPod], server_ids: Sequence[str]) -> list[int]:
    """Per server its SuperPoD's index in `super_pod_list` (-1: in none)."""
    pod_of = {sid: n for n, pod in enumerate(pods) for sid in pod.server_ids}
    return [pod_of.get(sid, -1) for sid in server_ids]


def superpods_grouped(order: list[int], placement: Placement, pods: Sequence[int]) -> list[int]:
    """`order` with the SuperPoD as the lowest tier above the server (A3): inside every leaf block the
    servers of one SuperPoD are made contiguous (their order among themselves kept). A block starts with
    the SuperPoD the previous block ended with and ends with one the next block has, where it can (the
    ring wraps: the last block leads into the first), so a SuperPoD that spans leaves stays contiguous
    too. Leaf blocks keep their places and members: the switch tiers' crossings do not change. Servers
    not in the topology (the last group) keep their order."""
    if placement.tiers < 1 or len(order) < 2:
        return list(order)
    group = placement.groups().tolist()  # equal = same switch at every tier; 0 = not in the topology
    blocks: list[list[int]] = []
    for i in order:
        if not blocks or group[i] != group[blocks[-1][0]]:
            blocks.append([])
        blocks[-1].append(i)
    pod_sets = [dict.fromkeys(pods[i] for i in block) for block in blocks]  # pods in order of appearance
    out: list[list[int]] = []
    first_pod = None  # the pod the ring starts with (what the last block should end with)
    previous = None
    for n, block in enumerate(blocks):
        present = pod_sets[n]
        if len(present) == 1 or group[block[0]] == 0:
            out.append(block)
            previous = pods[block[-1]]
            first_pod = pods[block[0]] if n == 0 else first_pod
            continue
        after = pod_sets[n + 1] if n + 1 < len(blocks) else dict.fromkeys([first_pod])
        if n == 0:  # the next block first; the wrap (the last block) only with what is left
            last = next((p for p in present if p in after), None) if len(blocks) > 1 else None
            first = next((p for p in present if p in pod_sets[-1] and p != last), None)
        else:
            first = previous if previous in present else None
            last = next((p for p in present if p in after and p != first), None)
        ranked = [p for p in present if p not in (first, last)]
        ranked = ([first] if first is not None else []) + ranked + ([last] if last is not None else [])
        place_of = {p: k for k, p in enumerate(ranked)}
        out.append(sorted(block, key=lambda i: place_of[pods[i]]))  # stable: order inside a pod kept
        previous = ranked[-1]
        first_pod = ranked[0] if n == 0 else first_pod
    return [i for block in out for i in block]


def _path_ranks(placement: Placement) -> tuple[np.ndarray, np.ndarray]:
    """Per server: unknown to the topology, and the rank of its switch path (top tier first, natural
    name order) among the paths in use; computed once per distinct path."""
    group = placement.groups()
    known = placement.group_keys[1:]  # group 0 is the unknown key
    paths = [tuple(tuple(natural_key(n) for n in key) for key in reversed(keys)) for keys in known]
    rank = {path: n for n, path in enumerate(sorted(set(paths)))}
    per_group = np.array([0, *map(rank.__getitem__, paths)], dtype=np.int64)
    return group == 0, per_group[group]


def mapping_text(old_ranks: Sequence[int] | np.ndarray) -> str:
    """ "newRank-oldRank,..." for new ranks 0..N-1."""
    pairs = np.empty(2 * len(old_ranks), dtype=np.int64)
    pairs[0::2] = np.arange(len(old_ranks))
    pairs[1::2] = old_ranks
    return ("%d-%d," * len(old_ranks) % tuple(pairs.tolist()))[:-1]


def renumber(table: RankTable, order: list[int]) -> tuple[RankTable, dict[str, int], str]:
    """The table with servers in `order`, ranks 0..N-1 contiguous per server, device order kept."""
    planned, node_rank, old_ranks = renumbered(table, order)
    return planned, node_rank, mapping_text(old_ranks)


def renumbered(
    table: RankTable, order: list[int]
) -> tuple[RankTable, dict[str, int], Sequence[int] | np.ndarray]:
    """`renumber` with the old rank of every new rank instead of the mapping text."""
    columns = lazy_columns(table)
    if columns is not None:
        return _renumber_columns(table, columns, order)
    servers: list[Server] = []
    node_rank: dict[str, int] = {}
    old_ranks: list[int] = []
    rank = 0
    for node, index in enumerate(order):
        src = table.servers[index]
        devices = [
            Device(
                d.device_id,
                new,
                d.device_ip,
                d.device_port,
                d.super_device_id,
                d.extra.copy() if d.extra else {},
            )
            for new, d in enumerate(src.devices, rank)
        ]
        old_ranks.extend([d.rank_id for d in src.devices])
        rank += len(devices)
        servers.append(
            Server(src.server_id, devices, src.host_ip, src.container_ip, src.hardware_type, dict(src.extra))
        )
        node_rank[src.server_id] = node
    planned = RankTable(table.status, table.version, servers, _copy_pods(table.super_pods), dict(table.extra))
    return planned, node_rank, old_ranks


def _renumber_columns(
    table: RankTable, columns: RankColumns, order: list[int]
) -> tuple[RankTable, dict[str, int], Sequence[int] | np.ndarray]:
    """`renumber` of a table read column-wise: the planned table is column-wise too."""
    planned_columns, old_ranks = columns.renumbered(order)
    node_rank = dict(zip(planned_columns.server_id, range(len(order)), strict=True))
    planned = RankTable.from_columns(
        table.status, table.version, planned_columns, _copy_pods(table.super_pods), dict(table.extra)
    )
    return planned, node_rank, old_ranks


def _copy_pods(pods: list[SuperPod] | None) -> list[SuperPod] | None:
    return None if pods is None else [SuperPod(p.super_pod_id, list(p.server_ids)) for p in pods]


def plan_routes(
    table: RankTable,
    topology: Topology,
    *,
    previous: RankTable | None = None,
    stable: bool = False,
) -> PlanResult:
    """Plan rank ids for `table` on `topology`.

    With ``stable=True`` and a `previous` (planned) table, servers present in both keep their ranks and
    new servers fill the freed slots nearest their switches; `PlanResult.replan` says what a full replan
    would gain instead.
    """
    with gc_paused():
        return _plan(table, topology, previous, stable)


def _plan(table: RankTable, topology: Topology, previous: RankTable | None, stable: bool) -> PlanResult:
    require_plannable(table)
    placement = place(table, topology)
    server_ids = (
        columns.server_id if (columns := lazy_columns(table)) else [s.server_id for s in table.servers]
    )
    codes = placement.tier_codes()
    full_order = topology_order(placement, topology.slice_ids)
    if table.super_pods and topology.tier_count:
        full_order = superpods_grouped(full_order, placement, _pod_per_server(table.super_pods, server_ids))
    warnings: list[str] = list(topology.warnings)  # what the topology loader accepted with a caveat
    unknown = [server_ids[i] for i in placement.unknown] if placement.unknown else []
    if unknown:
        shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        warnings.append(f"{len(unknown)} server(s) are not in the topology and go last as one group: {shown}")
    if topology.tier_count == 0:
        warnings.append("the topology has no switches; the plan keeps the given order")
    order = full_order
    replan: ReplanGain | None = None
    if stable:
        if previous is None:
            raise InputError("stable mode needs the previous planned table", where="previous")
        require_plannable(previous, "previous table")
        order, moved, new, stable_warnings = stable_order(table, previous, placement, full_order)
        warnings.extend(stable_warnings)
        full_plan, _, _ = renumber(table, full_order)
        replan = ReplanGain(
            kept_servers=len(table.servers) - len(new),
            moved_servers=moved,
            new_servers=new,
            crossings_per_tier=ring_crossings(codes, order),
            full_crossings_per_tier=ring_crossings(codes, full_order),
            full_plan=full_plan,
        )
    planned, node_rank, old_ranks = renumbered(table, order)
    return PlanResult(
        planned=planned,
        server_order=order,
        node_rank=node_rank,
        old_ranks=old_ranks,
        warnings=warnings,
        unknown_servers=unknown,
        crossings_per_tier=ring_crossings(codes, order),
        given_crossings_per_tier=ring_crossings(codes, placement.rank_order),
        switches_per_tier=[n if n > 1 else 0 for n in placement.switches_per_tier()],
        stable=stable,
        replan=replan,
        placement=placement,
    )
