"""Simulators for demos and tests: a Lite pool speaking the Kubernetes API (``pool``, ``control``,
``k8s``, ``controllers``) and a Notebook instance over SSH (``notebook*``).

The pool is the product's embedded default: ``control.ensure_running()`` starts it in the background
when needed and returns its kubeconfig path and context.
"""
