"""Where each rank runs: rank id (as trained, after route-plan renumbering) -> node rank, pod, server,
NPU and leaf switch. The cluster adapter fills it from the job's completed rank table and route plan;
without one, ``RankLayout.uniform`` numbers ranks by pod order."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class RankPlace:
    rank: int
    node_rank: int
    pod: str
    server: str | None = None
    device: int | None = None
    leaf: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class RankLayout:
    def __init__(self, places: Iterable[RankPlace]) -> None:
        self.by_rank: dict[int, RankPlace] = {}
        self.by_pod: dict[str, list[RankPlace]] = {}
        for place in places:
            self.by_rank[place.rank] = place
            self.by_pod.setdefault(place.pod, []).append(place)
        for ranks in self.by_pod.values():
            ranks.sort(key=lambda p: (p.device if p.device is not None else p.rank, p.rank))

    @classmethod
    def uniform(cls, pods: Sequence[tuple[str, int]], npus_per_pod: int = 1) -> RankLayout:
        """Ranks numbered node_rank x npus + local index: what a job without a rank table would use."""
        return cls(
            RankPlace(node_rank * npus_per_pod + local, node_rank, pod, device=local)
            for pod, node_rank in pods
            for local in range(max(1, npus_per_pod))
        )

    def place(self, rank: int) -> RankPlace | None:
        return self.by_rank.get(rank)

    def default_rank(self, pod: str, node_rank: int) -> int:
        """The rank that untagged lines of a pod are filed under: its lowest local rank."""
        places = self.by_pod.get(pod)
        if places:
            return places[0].rank
        return -1 - node_rank  # unknown pod: a negative key per node, never a real rank

    def local_rank(self, pod: str, local: int) -> int | None:
        """The global rank of torchrun's ``[default<local>]:`` on a pod."""
        places = self.by_pod.get(pod)
        if places and 0 <= local < len(places):
            return places[local].rank
        return None

    def __len__(self) -> int:
        return len(self.by_rank)
