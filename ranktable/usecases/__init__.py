"""Use cases: one place per domain that the CLI, the magics and the server extension call."""
