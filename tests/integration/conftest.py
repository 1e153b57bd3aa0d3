"""Fixtures for the integration tests only: real OpenSSH sshd, the simulated pool and pytest-jupyter's server.

Each area keeps its fixtures in tests/integration/fixtures/<area>.py. They are imported here, not listed in
the top-level `pytest_plugins`, so the core tests run without paramiko, kubernetes or Jupyter installed.
"""

from pytest_jupyter.jupyter_server import *  # noqa: F403

from tests.integration.fixtures.simpool import *  # noqa: F403
from tests.integration.fixtures.sshd import *  # noqa: F403
