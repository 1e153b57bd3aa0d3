"""The cost model's constants, read from `hccl_constants.json` (each figure carries its source there)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

PRODUCTS = ("910", "A2", "A3")


@cache
def constants() -> dict[str, Any]:
    """The data file, parsed once."""
    text = resources.files(__package__).joinpath("hccl_constants.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def _value(entry: Any) -> Any:
    return entry["value"] if isinstance(entry, dict) else entry


@dataclass(frozen=True)
class ProductLinks:
    """Per-product link figures (GB/s per NPU) and HCCL's in-server algorithm."""

    product: str
    label: str
    level0: str  # "mesh" or "ring"
    hccs_gbps: float
    roce_gbps: float
    hccs_l2_gbps: float


def product_links(product: str) -> ProductLinks:
    entry = constants()["products"][product]
    hccs = float(_value(entry["hccs_gbps"]))
    return ProductLinks(
        product=product,
        label=str(entry["label"]),
        level0=str(entry["level0"]),
        hccs_gbps=hccs,
        roce_gbps=float(_value(entry["roce_gbps"])),
        hccs_l2_gbps=float(_value(entry.get("hccs_l2_gbps", hccs))),
    )


def selector_value(name: str) -> Any:
    return _value(constants()["selector"][name])


def alpha_seconds() -> float:
    return float(_value(constants()["alpha_s"]))


def pairwise_sampled_steps() -> int:
    return int(_value(constants()["pairwise_sampled_steps"]))
