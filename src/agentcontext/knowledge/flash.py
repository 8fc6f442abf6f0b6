"""Flash: a module plus its transitive prerequisites, once each, foundations first (seed 000)."""
from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Sequence

from .. import access
from ..errors import BudgetExceededError, CycleError, MissingModuleError, ValidationError
from ..engine.closure import dependency_order
from ..model import to_utc_iso
from ..workspace import Workspace
from .graphview import DocMeta, pack_view
from .manifest import check_pack_name, check_selector
from .packs import doc_id, get_pack, render_section

DEGRADE_POLICIES = ("summaries",)


@dataclass(slots=True)
class BundleDoc:
    selector: str
    title: str
    kind: str
    version: int
    tokens: int
    content: str
    summary: str = ""
    degraded: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"selector": self.selector, "title": self.title, "kind": self.kind, "version": self.version,
                "tokens": self.tokens, "degraded": self.degraded}


@dataclass
class Bundle:
    """The assembled knowledge: ``order`` (selectors, foundations first), ``digest``, ``tokens``, ``text``."""

    pack: str
    targets: list[str]
    docs: list[BundleDoc]
    digest: str
    tokens: int
    text: str
    as_of: str | None = None
    degraded: list[str] = field(default_factory=list)
    policy: str | None = None

    @property
    def order(self) -> list[str]:
        return [d.selector for d in self.docs]

    def to_dict(self) -> dict[str, Any]:
        return {"pack": self.pack, "targets": self.targets, "order": self.order, "digest": self.digest,
                "tokens": self.tokens, "text": self.text, "as_of": self.as_of, "degraded": self.degraded,
                "policy": self.policy, "docs": [d.to_dict() for d in self.docs]}


def bundle_digest(ids: Sequence[str], metas: Sequence[DocMeta]) -> str:
    """Same graph state, same digest, on any machine: ids, versions and content hashes in order."""
    text = "".join(f"{i}\x1f{m.version}\x1f{m.content_hash}\x1e" for i, m in zip(ids, metas))
    return hashlib.sha256(text.encode()).hexdigest()


_content_cache: OrderedDict[str, str] = OrderedDict()  # content hash -> body; immutable, so never stale
_content_bytes = 0
CONTENT_CACHE_BYTES = 64 * 1024 * 1024


def _contents(ws: Workspace, ids: Sequence[str], metas: Sequence[DocMeta], as_of: str | None) -> dict[str, str]:
    """Bodies by id, from a bounded process-wide cache keyed by content hash, else from the store."""
    global _content_bytes
    out: dict[str, str] = {}
    missing = []
    for i, m in zip(ids, metas):
        body = _content_cache.get(m.content_hash)
        if body is None:
            missing.append(i)
        else:
            out[i] = body
    if missing:
        fetched = ws.store.get_contents(missing, as_of=as_of)
        by_id = dict(zip(ids, metas))
        for i, body in fetched.items():
            out[i] = body
            key = by_id[i].content_hash
            if key not in _content_cache and len(body) < CONTENT_CACHE_BYTES // 64:
                _content_cache[key] = body
                _content_bytes += len(body)
        while _content_bytes > CONTENT_CACHE_BYTES and _content_cache:
            _content_bytes -= len(_content_cache.popitem(last=False)[1])
    return out


def flash(ws: Workspace, pack: str, selectors: str | Sequence[str], budget_tokens: int | None = None,
          as_of: Any = None, principal: str | None = None, degrade: str | None = None) -> Bundle:
    """Assemble ``selectors`` of ``pack`` with every prerequisite (``depends_on``) first.

    Raises CycleError, MissingModuleError, AccessDeniedError (the first unreadable doc; never a
    partial bundle) or BudgetExceededError (unless ``degrade="summaries"`` makes it fit).
    """
    check_pack_name(pack)
    targets = [selectors] if isinstance(selectors, str) else list(selectors)
    if not targets:
        raise ValidationError("flash needs at least one selector")
    for s in targets:
        check_selector(s, "flash target")
    if budget_tokens is not None and (not isinstance(budget_tokens, int) or budget_tokens < 0):
        raise ValidationError(f"budget_tokens must be a non-negative integer, got {budget_tokens!r}")
    if degrade is not None and degrade not in DEGRADE_POLICIES:
        raise ValidationError(f"unknown degradation policy {degrade!r}; use one of {DEGRADE_POLICIES}")
    if not access.can_see(ws, principal, pack):  # before the lookup: reveals nothing
        raise access.deny(ws, principal, "flash", doc_id(pack, targets[0]), "read", pack, targets[0])
    get_pack(ws, pack)
    stamp = to_utc_iso(as_of)
    view = pack_view(ws, pack, stamp)
    readable = access.doc_filter(ws, principal, pack)  # None = the whole pack is readable
    try:
        ids = dependency_order([doc_id(pack, s) for s in targets], view.depends_on, view.ids,
                               label=lambda i: i.split("/", 1)[1] if "/" in i else i)
    except (CycleError, MissingModuleError) as exc:
        # A cycle or chain through docs the principal may not read must not reveal them.
        path = exc.data.get("cycle") or exc.data.get("chain") or []
        hidden = [s for s in path if readable is not None and view.exists(doc_id(pack, s)) and not readable(s)]
        if hidden:
            raise access.deny(ws, principal, "flash", doc_id(pack, hidden[0]), "read", pack, hidden[0]) from None
        raise
    if readable is not None:  # never a silently partial bundle: name the first unreadable doc in reading order
        for i in ids:
            selector = i.split("/", 1)[1]
            if not readable(selector):
                raise access.deny(ws, principal, "flash", i, "read", pack, selector)
    metas = [view.meta[i] for i in ids]
    contents = _contents(ws, ids, metas, stamp)
    docs = [BundleDoc(m.key, m.title, m.kind, m.version, m.tokens or 0, contents[i], m.summary)
            for i, m in zip(ids, metas)]
    total = sum(d.tokens for d in docs)
    degraded: list[str] = []
    if budget_tokens is not None and total > budget_tokens:
        if degrade == "summaries":
            total, degraded = _degrade_to_summaries(docs, set(targets), budget_tokens, total)
        if total > budget_tokens:
            largest = sorted(docs, key=lambda d: (-d.tokens, d.selector))[:5]
            raise BudgetExceededError(
                f"the bundle needs {total} tokens but the budget is {budget_tokens}; largest: "
                + ", ".join(f"{d.selector} ({d.tokens})" for d in largest)
                + "; raise the budget, split the large docs or pass degrade='summaries'",
                needed=total, budget=budget_tokens,
                largest=[{"selector": d.selector, "tokens": d.tokens} for d in largest])
    text = "\n".join(render_section(d.selector, d.title, d.summary if d.degraded else d.content) for d in docs)
    return Bundle(pack=pack, targets=targets, docs=docs, digest=bundle_digest(ids, metas), tokens=total,
                  text=text, as_of=stamp, degraded=degraded, policy=degrade if degraded else None)


def _degrade_to_summaries(docs: list[BundleDoc], targets: set[str], budget: int, total: int) -> tuple[int, list[str]]:
    """Replace the bodies of the largest prerequisites (never the targets) by their summaries until it fits."""
    from ..tokens import count_tokens

    degraded = []
    for doc in sorted((d for d in docs if d.selector not in targets), key=lambda d: (-d.tokens, d.selector)):
        if total <= budget:
            break
        small = count_tokens(render_section(doc.selector, doc.title, doc.summary))
        if small < doc.tokens:
            total -= doc.tokens - small
            doc.tokens, doc.degraded = small, True
            degraded.append(doc.selector)
    return total, degraded
