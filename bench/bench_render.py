"""Layout picture for 4,096 servers x 8 NPUs: seconds to render and SVG bytes (targets: < 2 s, < 5 MB).

Also renders the shipped 16-server example. With Chromium at /usr/bin/chromium, each SVG is
screenshotted to PNG once (`--png-dir`, default a temporary directory) so a person can look at it.

    .venv/bin/python bench/bench_render.py [--png-dir DIR] [--repeat N]
"""

from __future__ import annotations

import argparse
import random
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from ranktable.choice.cost import compare
from ranktable.examples import load_example_pool
from ranktable.hccl import Device, RankTable, Server
from ranktable.plan import plan_routes
from ranktable.render import layout_svg
from ranktable.topology import Topology, synthetic_topology

CHROMIUM = "/usr/bin/chromium"
TARGET_SECONDS = 2.0
TARGET_BYTES = 5 * 1024 * 1024


def shuffled_table(topology_ids: list[str], devices: int = 8, seed: int = 7) -> RankTable:
    """A pod-index order that knows nothing of switches, as the platform fills the table."""
    order = list(topology_ids)
    random.Random(seed).shuffle(order)
    servers = [
        Server(sid, [Device(d, i * devices + d, f"29.{i // 250}.{i % 250}.{d + 1}") for d in range(devices)])
        for i, sid in enumerate(order)
    ]
    return RankTable("completed", "1.0", servers)


def bench(label: str, table: RankTable, topology: Topology, repeat: int) -> str:
    planned = plan_routes(table, topology).planned
    comparison = compare(table, planned, topology)
    best = float("inf")
    svg = ""
    for _ in range(repeat):
        start = time.perf_counter()
        svg = layout_svg(table, planned, topology, comparison, title=label)
        best = min(best, time.perf_counter() - start)
    size = len(svg.encode("utf-8"))
    ET.fromstring(svg)  # must parse
    ok = best < TARGET_SECONDS and size < TARGET_BYTES
    print(
        f"{label}: render {best:.3f} s (best of {repeat}), {size / 1e6:.2f} MB "
        f"[targets < {TARGET_SECONDS:g} s, < {TARGET_BYTES / 2**20:g} MiB: {'met' if ok else 'MISSED'}]"
    )
    return svg


def screenshot(svg: str, png: Path, scale: float) -> None:
    """Chromium headless screenshot at the SVG's own size (skipped when Chromium is not installed)."""
    if not Path(CHROMIUM).exists():
        print(f"  (no {CHROMIUM}: PNG skipped)")
        return
    root = ET.fromstring(svg)
    width, height = int(float(root.get("width", "800"))), int(float(root.get("height", "600")))
    source = png.with_suffix(".svg")
    source.write_text(svg, encoding="utf-8")
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                f"--force-device-scale-factor={scale:g}",
                f"--window-size={width},{height}",
                f"--screenshot={png}",
                source.resolve().as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    print(f"  PNG: {png} ({width}x{height} at {scale:g}x)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--png-dir", type=Path, help="where PNG screenshots go (default: a temp dir)")
    parser.add_argument("--repeat", type=int, default=3, help="renders per case; the best time is shown")
    args = parser.parse_args()
    out = args.png_dir or Path(tempfile.mkdtemp(prefix="ranktable-render-"))
    out.mkdir(parents=True, exist_ok=True)

    pool = load_example_pool()
    svg = bench("Example pool: 16 servers", pool.table, pool.topology, args.repeat)
    screenshot(svg, out / "layout-demo.png", 2)

    cases = [(4096, 128, 8), (4096, 256, 16)]
    for servers, leaves, spines in cases:
        topology, ids = synthetic_topology(servers, leaves, spines, oversubscription=2.0)
        label = f"{servers} servers x 8 NPUs, {leaves} leaves, {spines} spines"
        svg = bench(label, shuffled_table(ids), topology, args.repeat)
        screenshot(svg, out / f"layout-{servers}-{leaves}.png", 1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
