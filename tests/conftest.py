"""Test layout: `tests/core/` needs only the core dependencies (PyYAML, numpy, pytest, hypothesis,
import-linter); `tests/integration/` adds the real sshd, the simulated pool and a Jupyter server, whose
fixtures are loaded only there (tests/integration/conftest.py)."""
