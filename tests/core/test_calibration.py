"""The constants against the only public hccl_test figures (CANN's 8-rank all-reduce example, in the
data file): the in-server bandwidth term matches; the fixed per-call cost does not (said in the docs)."""

from __future__ import annotations

import numpy as np

from ranktable.collectives.constants import constants, product_links


def test_the_in_server_bandwidth_matches_the_hccl_test_slope() -> None:
    points = constants()["calibration"]["hccl_test_allreduce_8_ranks"]["points_bytes_us"]
    large = np.array([(n, us * 1e-6) for n, us in points if n >= 1 << 20])
    slope, intercept = np.polyfit(large[:, 0], large[:, 1], 1)
    # a mesh all-reduce over 8 NPUs moves 2 x n/8 per link: seconds per byte = 2 / (8 x link bandwidth)
    fitted_gbps = 2 / (8 * slope) / 1e9
    assert abs(fitted_gbps / product_links("A2").hccs_gbps - 1) < 0.30  # fitted 16-20 GB/s vs 18.3
    # the measured fixed cost per call (~1.3-1.7 ms) is far above the model's 2 alpha = 0.12 ms: the same
    # for every rank order, so comparisons stand, absolute seconds are low by about that much
    assert intercept > 10 * 2 * constants()["alpha_s"]["value"]
