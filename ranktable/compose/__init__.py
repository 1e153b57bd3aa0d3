"""The job composer (pure core): a typed JobSpec, its checks, and the ConfigMap + Volcano Job built as data.

``spec`` (the fields), ``spec_flags`` (the same fields as argparse flags), ``validate`` (findings with a
field and a fix), ``flavours`` (node sizes), ``launchers`` (the container command) and ``manifests``
(spec <-> manifests). Nothing here talks to a cluster.
"""
