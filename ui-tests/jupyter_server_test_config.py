"""JupyterLab configuration for the browser tests: galata's settings (no token, test-friendly defaults)."""

from jupyterlab.galata import configure_jupyter_server

c = get_config()  # type: ignore[name-defined]  # noqa: F821
configure_jupyter_server(c)
c.ServerApp.ip = "127.0.0.1"
