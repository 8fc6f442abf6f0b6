"""Engines: pure code over the store's data (closure, traversal, analytics, vectors and live indexes, fusion,
proximity). Engines import only ``store/``, ``embed/`` and the base modules, never a service or an interface."""
