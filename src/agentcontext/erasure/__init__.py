"""Erasure (seed 003's ``ErasureCoordinator``): an entity out of every store and every byte the library controls.

``coordinator.py`` drives the legs, ``subject.py`` finds what belongs to the entity and what mentions it,
``receipt.py`` is the ``ErasureReceipt``, ``workspace.py`` the checked workspace erasure the CLI, MCP and the
web console call.
"""
from __future__ import annotations

from .coordinator import ErasureCoordinator
from .receipt import LEGS, STATUSES, ErasureReceipt
from .workspace import erase_workspace_entity

__all__ = ["ErasureCoordinator", "ErasureReceipt", "LEGS", "STATUSES", "erase_workspace_entity"]
