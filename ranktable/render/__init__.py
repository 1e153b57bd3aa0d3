"""The layout picture: switches by tier, servers and NPUs with ranks, the ring coloured by tier crossed."""

from ranktable.render.svg import DEFAULT_AGGREGATE_THRESHOLD, layout_svg

__all__ = ["DEFAULT_AGGREGATE_THRESHOLD", "layout_svg"]
