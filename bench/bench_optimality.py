"""Planner vs exhaustive search, per HCCL algorithm, on random small trees (the README's table).

Pools: 2-3 leaves of 1-3 servers (3-7 servers), 1-2 spines, uplinks 1:1, 2:1 or 4:1, 1 or 8 NPUs per
server; all-reduce of 256 MiB. Every server order is costed on the model (first server fixed).
Run: `.venv/bin/python bench/bench_optimality.py [pools]` (40 pools take about a minute).
"""

from __future__ import annotations

import random
import sys

from tests.core.optimality import ALGORITHMS, Pool, planner_and_best


def random_pools(count: int, seed: int = 1) -> list[Pool]:
    rng = random.Random(seed)
    pools = []
    while len(pools) < count:
        leaves = rng.randint(2, 3)
        per_leaf = tuple(rng.randint(1, 3) for _ in range(leaves))
        if not 3 <= sum(per_leaf) <= 7:
            continue
        spines = rng.choice([1, 2]) if leaves > 2 else 1
        pools.append(Pool(per_leaf, spines, rng.choice([1.0, 2.0, 4.0]), rng.choice([1, 8])))
    return pools


def summary(rows: list[tuple[float, float]]) -> tuple[int, float]:
    """(optimal cases, worst planner/best ratio)."""
    return sum(1 for a, b in rows if a <= b * (1 + 1e-9)), max(a / b for a, b in rows)


def main() -> None:
    pools = random_pools(int(sys.argv[1]) if len(sys.argv) > 1 else 40)
    print("| algorithm | planner optimal | worst gap (planner / best) | tree order alone: optimal, worst |")
    print("|---|---|---|---|")
    for algorithm in ("default", *ALGORITHMS):
        planned = [planner_and_best(p, algorithm) for p in pools]
        tree = [planner_and_best(p, algorithm, choose=False) for p in pools]

        ok, worst = summary(planned)
        tree_ok, tree_worst = summary(tree)
        print(f"| {algorithm} | {ok}/{len(pools)} | {worst:.3f} | {tree_ok}/{len(pools)}, {tree_worst:.3f} |")


if __name__ == "__main__":
    main()
