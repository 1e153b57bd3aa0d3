"""Use cases, one module per domain (``jobs``, ``layout``, ``remote``): what a user asks for, in one place.

They sit above the core and the adapters (cluster, remote) and below the interfaces (server extension,
magics, CLI, widgets), which parse input, call one use case and show its result.
"""
