"""Shared pytest set-up: each area keeps its fixtures in tests/fixtures/<area>.py."""

pytest_plugins = [
    "tests.fixtures.sshd",
    "tests.fixtures.simpool",
    "pytest_jupyter.jupyter_server",
]
