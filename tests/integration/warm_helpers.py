"""The warm CLI server's client alone, shared by its tests and its benchmark (`bench/bench_cli.py`)."""

# `python -c THROUGH_WARM argv...` runs a command through the warm server only: exit 3 (WarmUnavailable)
# when none answers, so a caller can tell "served warm" from the cold path.
THROUGH_WARM = (
    "import sys\n"
    "from ranktable.cli import warm\n"
    "try:\n"
    "    sys.exit(warm.run_warm(sys.argv[1:]))\n"
    "except warm.WarmUnavailable:\n"
    "    sys.exit(3)\n"
)
