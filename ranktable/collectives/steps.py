"""Each HCCL algorithm as an explicit list of steps: who sends to whom, and how many bytes.

A step's partners are a rule on positions 0..p-1 of the communicator (the order HCCL numbers its ranks),
so the engine can put every step's flows on the real switch tree. Bytes are a fraction of the level's
buffer: the per-rank data for all-reduce and broadcast, the whole gathered/scattered buffer for
all-gather and reduce-scatter, the per-rank send buffer for all-to-all. Patterns follow the hicann/hccl
algorithm pages (Ring, RHD, NHR, NB, Pairwise, Mesh) and the NHR templates
(`ins_temp_reduce_scatter_nhr.cc`, `ins_temp_all_gather_nhr.cc`).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import numpy as np

OPERATIONS = ("allreduce", "allgather", "reducescatter", "broadcast", "alltoall")


@dataclass(frozen=True)
class Step:
    """One step: `pattern` with `distance` gives every sender's partner; `fraction` of the buffer moves
    per sender; `repeat` identical steps in a row (a ring's p-1)."""

    pattern: (
        str  # "shift" (r -> r+distance mod p), "xor" (HD on the power-of-2 core), "fold", "unfold", "mesh"
    )
    distance: int
    fraction: float
    repeat: int = 1
    reduce: bool = False

    def describe(self) -> str:
        if self.pattern == "shift":
            sign = "+" if self.distance >= 0 else "-"
            return f"r -> r{sign}{abs(self.distance)}"
        if self.pattern == "xor":
            return f"r -> r xor {self.distance}"
        if self.pattern == "fold":
            return "odd r -> r-1 (fold to a power of 2)"
        if self.pattern == "unfold":
            return "even r -> r+1 (unfold)"
        return "every r -> all peers (mesh)"


def partners(step: Step, p: int) -> tuple[np.ndarray, np.ndarray]:
    """(senders, receivers) as position arrays for one step on a communicator of p ranks."""
    if step.pattern == "shift":
        src = np.arange(p, dtype=np.int64)
        return src, (src + step.distance) % p
    core = 1 << (p.bit_length() - 1)
    extra = p - core
    if step.pattern == "xor":
        active = np.concatenate(
            [np.arange(0, 2 * extra, 2, dtype=np.int64), np.arange(2 * extra, p, dtype=np.int64)]
        )
        return active, active[np.arange(core, dtype=np.int64) ^ step.distance]
    if step.pattern == "fold":
        src = np.arange(1, 2 * extra, 2, dtype=np.int64)
        return src, src - 1
    if step.pattern == "unfold":
        src = np.arange(0, 2 * extra, 2, dtype=np.int64)
        return src, src + 1
    src = np.repeat(np.arange(p, dtype=np.int64), p)
    dst = np.tile(np.arange(p, dtype=np.int64), p)
    keep = src != dst
    return src[keep], dst[keep]


def _ring(op: str, p: int) -> list[Step]:
    rs = Step("shift", 1, 1 / p, p - 1, reduce=op != "broadcast")
    ag = Step("shift", 1, 1 / p, p - 1)
    return {"reducescatter": [rs], "allgather": [ag]}.get(op, [rs, ag])


def _hd(op: str, p: int) -> list[Step]:
    """Recursive halving-doubling; a non-power-of-2 p folds its first 2r ranks pairwise first."""
    levels = p.bit_length() - 1
    core = 1 << levels
    extra = p - core
    reduce = op != "broadcast"
    if op == "reducescatter":
        out = [Step("fold", 0, 1.0, reduce=True)] if extra else []
        out += [Step("xor", 1 << (levels - 1 - k), (1 << k) / core, reduce=True) for k in range(levels)]
        return out + ([Step("unfold", 0, 1 / p)] if extra else [])
    if op == "allgather":
        out = [Step("fold", 0, 1 / p)] if extra else []
        out += [Step("xor", 1 << k, (1 << k) / core) for k in range(levels)]
        return out + ([Step("unfold", 0, 1.0)] if extra else [])
    halving = [Step("xor", 1 << k, 1 / (1 << (k + 1)), reduce=reduce) for k in range(levels)]
    doubling = [Step("xor", 1 << k, 1 / (1 << (k + 1))) for k in reversed(range(levels))]
    fold = [Step("fold", 0, 1.0, reduce=reduce)] if extra else []
    unfold = [Step("unfold", 0, 1.0)] if extra else []
    return fold + halving + doubling + unfold


def log_steps(p: int) -> int:
    return (p - 1).bit_length()


def _slices(p: int, s: int) -> float:
    """Slices of 1/p a rank sends in step s of NHR / NB reduce-scatter: floor((p-1+2^s) / 2^(s+1))."""
    return ((p - 1 + (1 << s)) // (1 << (s + 1))) / p


def _nhr(op: str, p: int, direction: int) -> list[Step]:
    """NHR (direction -1: send to r-2^s) and NB (+1, Bruck stride): ceil(log2 p) steps, the largest
    share to the nearest partner; all-gather mirrors reduce-scatter."""
    count = log_steps(p)
    reduce = op != "broadcast"
    rs = [Step("shift", direction * (1 << s), _slices(p, s), reduce=reduce) for s in range(count)]
    ag = [Step("shift", -direction * (1 << s), _slices(p, s)) for s in reversed(range(count))]
    return {"reducescatter": rs, "allgather": ag}.get(op, rs + ag)


def _pairwise(p: int, sampled: int) -> list[Step]:
    """Pairwise all-to-all: step k sends 1/p to r+k. Above `sampled` steps, evenly spaced shifts stand
    for their band (`repeat` = band width) so 8,192 servers stay fast."""
    if p - 1 <= sampled:
        return [Step("shift", k, 1 / p) for k in range(1, p)]
    edges = np.linspace(1, p, sampled + 1).round().astype(np.int64)
    out = []
    for lo, hi in pairwise(edges.tolist()):
        if hi > lo:
            out.append(Step("shift", int((lo + hi - 1) // 2), 1 / p, int(hi - lo)))
    return out


def _mesh(op: str, p: int) -> list[Step]:
    """Level0 full mesh: every peer at once on its own HCCS link; alpha + n/p per phase."""
    if op == "alltoall":
        return [Step("mesh", 0, 1 / p)]
    if op == "broadcast":
        return [Step("mesh", 0, 1 / p), Step("mesh", 0, 1 / p)]
    rs = Step("mesh", 0, 1 / p, reduce=True)
    ag = Step("mesh", 0, 1 / p)
    return {"reducescatter": [rs], "allgather": [ag]}.get(op, [rs, ag])


def algorithm_steps(algorithm: str, op: str, p: int, *, sampled: int = 64) -> list[Step]:
    """The step list of `algorithm` running `op` over p ranks (empty for p = 1)."""
    if p <= 1:
        return []
    if op == "alltoall" and algorithm != "mesh":
        return _pairwise(p, sampled)
    if algorithm in ("ring", "pipeline"):
        return _ring(op, p)
    if algorithm == "H-D_R":
        return _hd(op, p)
    if algorithm in ("NHR", "NHR_V1"):
        return _nhr(op, p, -1)
    if algorithm in ("NB", "AHC"):
        return _nhr(op, p, +1)
    if algorithm == "mesh":
        return _mesh(op, p)
    raise ValueError(f"unknown algorithm {algorithm!r}")
