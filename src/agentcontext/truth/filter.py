"""``TruthMaintenanceContextFilter``: drop retrieval candidates whose declared support is gone.

The filter validates only what the application wrote into ``metadata["truth_maintenance"]``:
exactly ``schema_version`` (1), ``session_id`` (this filter's), ``required_facts`` and
``required_support_ids``, with at least one entry between the last two. A candidate survives when
every required fact holds and every required support is active in the snapshot taken when the
retrieval began; for graph bundles the root and every related entity/relationship must pass too.
Survivors are deep copies stamped with ``metadata["truth_maintenance_validation"]``; originals are
never modified. A session that commits a new version during the retrieval makes it fail with
``ProcessingError`` rather than return mixed-version results.
"""
from __future__ import annotations

import copy
from typing import Any, Protocol, Sequence, runtime_checkable

from ..errors import ProcessingError, ValidationError
from .session import TruthMaintenanceSession, TruthSnapshot, canonical

SCHEMA_VERSION = 1
KEYS = frozenset({"schema_version", "session_id", "required_facts", "required_support_ids"})


@runtime_checkable
class _Annotated(Protocol):
    metadata: Any  # a retrieved record's metadata (retrieval.RetrievedContext is one)


@runtime_checkable
class _WithRelated(Protocol):
    related_entities: Any
    related_relationships: Any


def _metadata(item: Any) -> Any:
    if isinstance(item, dict):
        return item.get("metadata")
    return item.metadata if isinstance(item, _Annotated) else None


def _related(candidate: Any) -> tuple[Any, Any]:
    """A candidate's related entities and relationships (each may be None)."""
    if isinstance(candidate, dict):
        return candidate.get("related_entities"), candidate.get("related_relationships")
    if isinstance(candidate, _WithRelated):
        return candidate.related_entities, candidate.related_relationships
    return None, None


class TruthMaintenanceContextFilter:
    def __init__(self, session: TruthMaintenanceSession, session_id: str | None = None) -> None:
        if not isinstance(session, TruthMaintenanceSession):
            raise ValidationError("TruthMaintenanceContextFilter needs a TruthMaintenanceSession")
        self.session = session
        self.session_id = session_id or session.session_id

    def begin(self) -> TruthSnapshot:
        return self.session.snapshot()

    def finish(self, snapshot: TruthSnapshot) -> None:
        if self.session.version != snapshot.version:
            raise ProcessingError(
                f"the truth-maintenance session moved from version {snapshot.version} to {self.session.version} "
                "while retrieving; retry the retrieval", started=snapshot.version, now=self.session.version)

    def supported(self, metadata: Any, snapshot: TruthSnapshot) -> bool:
        """True when ``metadata`` carries a well-formed annotation that the snapshot supports."""
        if not isinstance(metadata, dict):
            return False
        note = metadata.get("truth_maintenance")
        if not isinstance(note, dict) or set(note) != KEYS:
            return False
        version = note["schema_version"]
        if isinstance(version, bool) or version != SCHEMA_VERSION or note["session_id"] != self.session_id:
            return False
        facts, supports = note["required_facts"], note["required_support_ids"]
        if not isinstance(facts, list) or not isinstance(supports, list) or not (facts or supports):
            return False
        if not all(isinstance(x, str) for x in facts + supports):
            return False
        try:
            needed = [canonical(f) for f in facts]
        except ValidationError:
            return False
        return all(f in snapshot.facts for f in needed) and all(s in snapshot.active_supports for s in supports)

    def keep(self, candidate: Any, snapshot: TruthSnapshot) -> bool:
        if not self.supported(_metadata(candidate), snapshot):
            return False
        for members in _related(candidate):
            for member in members or []:
                if not self.supported(_metadata(member), snapshot):
                    return False
        return True

    def filter(self, candidates: Sequence[Any], snapshot: TruthSnapshot | None = None) -> list[Any]:
        """Supported candidates as stamped deep copies, in their original order."""
        snap = snapshot or self.begin()
        out = []
        for candidate in candidates:
            if not self.keep(candidate, snap):
                continue
            clone = copy.deepcopy(candidate)
            meta = _metadata(clone)
            meta["truth_maintenance_validation"] = {"session_id": self.session_id, "version": snap.version}
            out.append(clone)
        return out
