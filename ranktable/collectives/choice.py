"""Which algorithm HCCL runs: `HCCL_ALGO` parsing and HCCL's own default selection, with the reason.

Syntax (hicann/hccl `docs/en/user_guide/hccl_env/HCCL_ALGO.md`): global
``level0:NA;level1:<algo>[;level2:<algo>]`` or per operator ``<op>=level0:NA;level1:<algo>/<op2>=...``;
unlisted operators stay automatic. Defaults: Atlas training series ring unless the server count is a
power of 2 (then H-D_R); A2 adaptive (the open 2024 selector: pipeline first, else the cheapest of ring,
NHR and H-D_R by its alpha-beta formulas, ties ring > NHR > H-D_R); level2 ring for fewer than 8
SuperPoDs that are not a power of 2, else H-D_R.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ranktable.collectives.constants import alpha_seconds, product_links, selector_value
from ranktable.collectives.setting_text import setting_items
from ranktable.errors import InputError

LEVEL1_ALGORITHMS = ("ring", "H-D_R", "NHR", "NHR_V1", "NB", "AHC", "pipeline", "pairwise")
LEVEL2_ALGORITHMS = ("ring", "H-D_R", "NHR", "NB", "pipeline", "AHC")
OPERATOR_NAMES = {
    "allgather": "allgather",
    "allgatherv": "allgather",
    "reducescatter": "reducescatter",
    "reducescatterv": "reducescatter",
    "allreduce": "allreduce",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "scatter": "scatter",
    "alltoall": "alltoall",
    "alltoallv": "alltoall",
    "alltoallvc": "alltoall",
}
ALL_OPERATORS = "*"
MAX_SETTING_CHARS = 1024
_CANONICAL = {name.lower(): name for name in LEVEL1_ALGORITHMS}
SUPPORTED = {  # which operators each level-1 algorithm runs (inter_server_algo_support.md)
    "ring": {"allreduce", "allgather", "reducescatter", "broadcast"},
    "H-D_R": {"allreduce", "allgather", "reducescatter", "broadcast"},
    "NHR": {"allreduce", "allgather", "reducescatter", "broadcast"},
    "NHR_V1": {"allreduce", "allgather", "reducescatter", "broadcast"},
    "NB": {"allreduce", "allgather", "reducescatter", "broadcast"},
    "AHC": {"allreduce", "allgather", "reducescatter"},
    "pipeline": {"allreduce", "allgather", "reducescatter"},
    "pairwise": {"alltoall"},
}


@dataclass(frozen=True)
class LevelSetting:
    """What HCCL_ALGO forces for one operator (None = automatic)."""

    level1: str | None = None
    level2: str | None = None


def _algorithm(text: str, level: str, where: str) -> str:
    name = _CANONICAL.get(text.strip().lower())
    allowed = LEVEL1_ALGORITHMS if level == "level1" else LEVEL2_ALGORITHMS
    if name is None or name not in allowed:
        raise InputError(
            f"{level} algorithm {text.strip()!r} is not one HCCL knows",
            where=where,
            fix=f"use one of {', '.join(allowed)}",
        )
    return name


def _levels(text: str, where: str) -> LevelSetting:
    found: dict[str, str] = {}
    for part, level, sep, value in setting_items(text, ";", ":"):
        if not sep or level not in ("level0", "level1", "level2"):
            raise InputError(
                f"{part!r} is not level0:NA, level1:<algo> or level2:<algo>",
                where=where,
                fix='write e.g. "level0:NA;level1:H-D_R"',
            )
        if level in found:
            raise InputError(f"{level} is given twice", where=where)
        if level == "level0":
            if value.strip().upper() != "NA":
                raise InputError("level0 accepts only NA", where=where, fix='write "level0:NA"')
            found[level] = "NA"
        else:
            found[level] = _algorithm(value, level, where)
    level1, level2 = found.get("level1"), found.get("level2")
    if level1 == "AHC" and level2 is None:
        level2 = "AHC"  # level1:AHC forces AHC at level2 too (HCCL_ALGO.md)
    return LevelSetting(level1, level2)


def parse_hccl_algo(text: str, where: str = "HCCL_ALGO") -> dict[str, LevelSetting]:
    """HCCL_ALGO (or `--algo`) -> operator -> setting; `*` is the global form. A bare algorithm name
    (`--algo NHR`) means level1 for every operator."""
    if len(text) > MAX_SETTING_CHARS:
        raise InputError(f"longer than {MAX_SETTING_CHARS} characters", where=where)
    text = text.strip()
    if not text:
        raise InputError("is empty", where=where, fix='e.g. "level0:NA;level1:ring"')
    if ":" not in text and "=" not in text:
        return {ALL_OPERATORS: LevelSetting(_algorithm(text, "level1", where))}
    if "=" not in text:
        return {ALL_OPERATORS: _levels(text, where)}
    out: dict[str, LevelSetting] = {}
    for entry in text.split("/"):
        op, sep, levels = entry.partition("=")
        name = OPERATOR_NAMES.get(op.strip().lower())
        if not sep or name is None:
            raise InputError(
                f"{op.strip()!r} is not an operator HCCL_ALGO names",
                where=where,
                fix=f"use <op>=level0:NA;level1:<algo> with op one of {', '.join(sorted(OPERATOR_NAMES))}",
            )
        out[name] = _levels(levels, where)
    return out


def setting_for(settings: dict[str, LevelSetting] | None, op: str) -> LevelSetting | None:
    if not settings:
        return None
    return settings.get(op) or settings.get(ALL_OPERATORS)


def is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def detect_product(version: str, has_super_pods: bool, hardware_types: set[str]) -> tuple[str, str]:
    """(product, why) from what the rank table says."""
    if version == "1.2" or has_super_pods:
        return "A3", "rank table 1.2 with super_pod_list (Atlas A3 SuperPoD)"
    joined = " ".join(sorted(hardware_types)).upper()
    if "A3" in joined:
        return "A3", f"hardware_type {joined}"
    if "9000" in joined or "9010" in joined or "910A" in joined:
        return "910", f"hardware_type {joined} (Atlas training series)"
    if joined:
        return "A2", f"hardware_type {joined}"
    return "A2", "rank table 1.0, as the platform writes it for Atlas 800T A2"


@dataclass(frozen=True)
class Choice:
    """The algorithm an estimate assumes, and why."""

    algorithm: str  # level1 (between servers); "mesh"/"ring" when one server holds everything
    reason: str
    level2: str | None = None  # between SuperPoDs (A3)
    forced: bool = False


def _selector_costs(op: str, servers: int, per_server: int, size: float, gbps: float) -> dict[str, float]:
    """The 2024 A2 selector's alpha-beta costs (coll_alg_operator.cc), size capped at the CCL buffer."""
    alpha = alpha_seconds()
    m = servers
    size = min(size, float(selector_value("ccl_buffer_bytes")))
    logm = math.ceil(math.log2(m))
    bandwidth = gbps * 1e9
    if op in ("allreduce", "broadcast"):
        volume = 2 * (m - 1) / m * (size / per_server) / bandwidth
        hd_volume = volume if is_power_of_two(m) else 2 * (2 * m - 1) / m * (size / per_server) / bandwidth
        return {
            "ring": 2 * (m - 1) * alpha + volume,
            "NHR": 2 * logm * alpha + volume,
            "H-D_R": 2 * logm * alpha + hd_volume,
        }
    volume = (m - 1) / m * size / bandwidth
    return {"ring": (m - 1) * alpha + volume, "NHR": logm * alpha + volume, "H-D_R": logm * alpha + volume}


def _pipeline_reason(op: str, product: str, servers: int, per_server: int, size: float) -> str | None:
    """Why the A2 selector picks pipeline, or None if it does not."""
    if product_links(product).level0 != "mesh" or per_server <= 1 or servers <= 1:
        return None
    if op == "allreduce":
        least = float(selector_value("pipeline_allreduce_min_slice_bytes"))
        slice_ = size / (servers * per_server)
        if slice_ >= least:
            return f"pipeline: the slice n/(m*d) = {_size(slice_)} is at least {_size(least)}"
        return None
    if op in ("allgather", "reducescatter"):
        key = "pipeline_allgather_min_bytes" if op == "allgather" else "pipeline_reducescatter_min_bytes"
        least = float(selector_value(key))
        per_rank = size / (servers * per_server)
        if per_rank >= least:
            return f"pipeline: {_size(per_rank)} per rank is at least {_size(least)}"
    return None


def _size(n: float) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n:.0f} B"


def default_level1(op: str, product: str, servers: int, per_server: int, size: float) -> Choice:
    """HCCL's own level-1 choice for `op` on `servers` servers of `per_server` ranks (size: the level
    buffer in bytes: per-rank data for all-reduce, the whole buffer for all-gather / reduce-scatter)."""
    if servers <= 1:
        level0 = product_links(product).level0 if per_server > 1 else "none"
        return Choice(level0, f"one server: in-server ({level0}) only")
    if op == "alltoall":
        return Choice(
            "pairwise", "all-to-all between servers runs pairwise (the level-1 all-to-all algorithm)"
        )
    if product == "910":
        if is_power_of_two(servers):
            return Choice(
                "H-D_R", f"Atlas training series default: {servers} servers is a power of 2 -> H-D_R"
            )
        return Choice("ring", f"Atlas training series default: {servers} servers is not a power of 2 -> ring")
    why = _pipeline_reason(op, product, servers, per_server, size)
    if why is not None:
        return Choice("pipeline", f"{product} selector: {why}")
    costs = _selector_costs(op, servers, per_server, size, product_links(product).roce_gbps)
    order = list(selector_value("tie_order"))
    best = min(order, key=lambda name: (round(costs[name], 12), order.index(name)))
    shown = ", ".join(f"{name} {costs[name] * 1e3:.3g} ms" for name in order)
    return Choice(
        best, f"{product} selector alpha-beta costs ({shown}); {best} is cheapest (ties: ring > NHR > H-D_R)"
    )


def default_level2(pods: int) -> tuple[str, str]:
    limit = int(selector_value("level2_ring_max_pods"))
    if pods < limit and not is_power_of_two(pods):
        return "ring", f"level2 default: {pods} SuperPoDs, fewer than {limit} and not a power of 2 -> ring"
    return "H-D_R", f"level2 default: {pods} SuperPoDs -> H-D_R"


def choose(
    op: str,
    product: str,
    servers: int,
    per_server: int,
    size: float,
    *,
    settings: dict[str, LevelSetting] | None = None,
    pods: int = 0,
    source: str = "HCCL_ALGO",
) -> Choice:
    """HCCL_ALGO when it applies to `op` (with HCCL's fallback when the pair is unsupported), else
    HCCL's default. `pods` > 1 adds the level-2 choice between SuperPoDs."""
    auto = default_level1(op, product, servers, per_server, size)
    level2, level2_reason = default_level2(pods) if pods > 1 else (None, "")
    setting = setting_for(settings, op)
    forced = False
    choice = auto
    if setting is not None and setting.level1 is not None and servers > 1:
        wanted = setting.level1
        if op in SUPPORTED[wanted] and not (wanted == "pipeline" and auto.algorithm == "mesh"):
            usable = wanted != "pipeline" or (product_links(product).level0 == "mesh" and per_server > 1)
            if usable:
                choice, forced = Choice(wanted, f"{source} sets level1:{wanted}", forced=True), True
            else:
                choice = Choice(
                    auto.algorithm,
                    f"{source} sets level1:pipeline, which needs a mesh in-server level and several "
                    f"NPUs per server; HCCL falls back to its own choice: {auto.reason}",
                )
        else:
            choice = Choice(
                auto.algorithm,
                f"{source} sets level1:{wanted}, which HCCL does not run for {op} "
                f"(inter_server_algo_support.md); it falls back to its own choice: {auto.reason}",
            )
    if pods > 1:
        if setting is not None and setting.level2 is not None and op != "alltoall":
            level2, level2_reason, forced = setting.level2, f"{source} sets level2:{setting.level2}", True
        reason = f"{choice.reason}; {level2_reason}"
        return Choice(choice.algorithm, reason, level2, forced)
    return choice
