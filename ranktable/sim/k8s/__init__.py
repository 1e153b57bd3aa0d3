"""A small Kubernetes API server: enough REST, discovery and OpenAPI for kubectl and the Python client."""
