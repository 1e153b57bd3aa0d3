"""A real Kubernetes + Volcano control plane and our controllers on it (docs/control-plane.md)."""
