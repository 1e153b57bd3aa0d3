"""Ranktable-routed Volcano jobs: a typed spec, the manifests composed from it, and a cluster client.

The composer (``spec``, ``compose``, ``validate``, ``launchers``) is pure data work; only ``cluster`` and
``logs`` talk to Kubernetes, and only ``launch`` runs inside the training image (core dependencies only).
"""
