"""The in-container launcher (`ranktable launch`): runs on the training image's Python.

Only the standard library here; `ranktable wait` / `ranktable route`, which the launcher runs, need the
pure core (PyYAML, numpy). Minimal install in a training image (see docs/launcher.md)::

    pip install --no-deps jupyter-ranktable && pip install PyYAML numpy
"""
