"""Flash: a module plus its transitive prerequisites, once each, foundations first (seed 000)."""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from .. import access
from ..engine.closure import closure_order, missing_target
from ..errors import BudgetExceededError, CycleError, MissingModuleError, NotFoundError, ValidationError
from ..model import to_utc_iso
from ..workspace import Workspace
from .graphview import ClosureIndex, DocMeta, pack_view
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


class Bundle:
    """The assembled knowledge: ``order`` (selectors, foundations first), ``digest``, ``tokens``, ``text``,
    and ``docs`` (one ``BundleDoc`` each, made on first access: a 20,000-doc bundle is mostly read as text)."""

    def __init__(self, pack: str, targets: list[str], order: list[str], digest: str, tokens: int, text: str,
                 docs: list[BundleDoc] | Callable[[], list[BundleDoc]], as_of: str | None = None,
                 degraded: list[str] | None = None, policy: str | None = None) -> None:
        self.pack, self.targets, self.order, self.digest = pack, targets, order, digest
        self.tokens, self.text, self.as_of = tokens, text, as_of
        self.degraded = degraded or []
        self.policy = policy
        self._docs = docs

    @property
    def docs(self) -> list[BundleDoc]:
        if callable(self._docs):
            self._docs = self._docs()
        return self._docs

    def to_dict(self) -> dict[str, Any]:
        return {"pack": self.pack, "targets": self.targets, "order": self.order, "digest": self.digest,
                "tokens": self.tokens, "text": self.text, "as_of": self.as_of, "degraded": self.degraded,
                "policy": self.policy, "docs": [d.to_dict() for d in self.docs]}

    def __repr__(self) -> str:
        return f"Bundle(pack={self.pack!r}, targets={self.targets!r}, docs={len(self.order)}, tokens={self.tokens})"


def bundle_digest(ids: Sequence[str], metas: Sequence[DocMeta]) -> str:
    """Same graph state, same digest, on any machine: ids, versions and content hashes in order."""
    text = "".join(f"{i}\x1f{m.version}\x1f{m.content_hash}\x1e" for i, m in zip(ids, metas))
    return hashlib.sha256(text.encode()).hexdigest()


CONTENT_CACHE_BYTES = 64 * 1024 * 1024


class ContentCache:
    """(body, rendered section) by content hash, bounded in bytes, oldest out. A content hash covers the
    selector, the title and the body, so an entry is never stale."""

    def __init__(self, limit: int = CONTENT_CACHE_BYTES) -> None:
        self.limit = limit
        self.size = 0
        self.entries: OrderedDict[str, tuple[str, str]] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, items: dict[str, tuple[str, str]]) -> None:
        with self._lock:
            for key, entry in items.items():
                cost = len(entry[0]) + len(entry[1])
                if key not in self.entries and cost < self.limit // 64:
                    self.entries[key] = entry
                    self.size += cost
            while self.size > self.limit and self.entries:
                body, section = self.entries.popitem(last=False)[1]
                self.size -= len(body) + len(section)


def _contents(ws: Workspace, closure: ClosureIndex, order: list[int], as_of: str | None
              ) -> tuple[list[str], Callable[[], list[str]]]:
    """The rendered section of each doc in ``order``, and a function giving their bodies.

    Served from the closure index's columns; the docs it does not hold yet come from the workspace's
    content cache (which outlives a rebuilt view) or, the rest, from one store query."""
    sections = list(map(closure.sections.__getitem__, order))
    held = closure.bodies
    if None not in sections:
        return sections, lambda: list(map(held.__getitem__, order))
    cache = ws.held("flash.contents", ContentCache)
    extra: dict[int, tuple[str, str]] = {}
    fetch = []
    for i, section in zip(order, sections):
        if section is None:
            entry = cache.entries.get(closure.hashes[i])
            if entry is None:
                fetch.append(i)
            else:
                extra[i] = entry
    if fetch:
        bodies = ws.store.get_contents([closure.names[i] for i in fetch], as_of=as_of)
        fresh: dict[str, tuple[str, str]] = {}
        for i in fetch:
            meta = closure.metas[i]
            body = bodies.get(closure.names[i])
            if meta is None or body is None:
                raise NotFoundError(f"doc {closure.selectors[i]!r} vanished while the bundle was assembled; retry",
                                    selector=closure.selectors[i])
            extra[i] = fresh[meta.content_hash] = (body, render_section(meta.key, meta.title, body))
        cache.put(fresh)
    closure.hold(extra, CONTENT_CACHE_BYTES)
    sections = [section if section is not None else extra[i][1] for i, section in zip(order, sections)]
    return sections, lambda: [body if body is not None else extra[i][0]
                              for i, body in zip(order, map(held.__getitem__, order))]


def flash(ws: Workspace, pack: str, selectors: str | Sequence[str], budget_tokens: int | None = None,
          as_of: Any = None, principal: str | None = None, degrade: str | None = None) -> Bundle:
    """Assemble ``selectors`` of ``pack`` with every prerequisite (``depends_on``) first.

    Raises CycleError, MissingModuleError, AccessDeniedError (when a doc it needs is not readable; never a
    partial bundle, and the denial names only a doc the principal may read or asked for, never the hidden one)
    or BudgetExceededError (unless ``degrade="summaries"`` makes it fit).
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
    get_pack(ws, pack, principal)
    stamp = to_utc_iso(as_of)
    view = pack_view(ws, pack, stamp)
    closure = view.closure
    readable = access.doc_filter(ws, principal, pack)  # None = the whole pack is readable
    try:
        start = []
        for s in targets:
            i = closure.index.get(doc_id(pack, s))
            if i is None:
                raise missing_target(s)
            start.append(i)
        order = closure_order(start, closure.dag, closure.label)
    except (CycleError, MissingModuleError) as exc:
        # A cycle or chain through docs the principal may not read must not reveal them.
        path = exc.data.get("cycle") or exc.data.get("chain") or []
        if any(readable is not None and view.exists(doc_id(pack, s)) and not readable(s) for s in path):
            raise _hidden_prerequisite(ws, principal, pack, targets[0]) from None
        raise
    selectors_in_order = list(map(closure.selectors.__getitem__, order))
    if readable is not None:  # never a silently partial bundle, and never a hidden doc's name in the denial
        hidden = {i for i, selector in zip(order, selectors_in_order) if not readable(selector)}
        if hidden:  # name a target it may not read, else the first readable doc that needs a hidden one
            asked = [t for t in targets if closure.index[doc_id(pack, t)] in hidden]
            needs = asked[0] if asked else next(closure.selectors[i] for i in order
                                                if i not in hidden and hidden.intersection(closure.dag.children[i]))
            raise _hidden_prerequisite(ws, principal, pack, needs)
    sections, bodies = _contents(ws, closure, order, stamp)
    total = sum(map(closure.tokens.__getitem__, order))
    digest = hashlib.sha256(b"".join(map(closure.digest_lines.__getitem__, order))).hexdigest()

    def make_docs() -> list[BundleDoc]:
        return [BundleDoc(m.key, m.title, m.kind, m.version, m.tokens or 0, body, m.summary)
                for m, body in zip(map(closure.metas.__getitem__, order), bodies())]

    if budget_tokens is None or total <= budget_tokens:
        return Bundle(pack, targets, selectors_in_order, digest, total, "\n".join(sections), make_docs, stamp)
    docs = make_docs()
    degraded: list[str] = []
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
    text = "\n".join(render_section(d.selector, d.title, d.summary) if d.degraded else section
                     for d, section in zip(docs, sections))
    return Bundle(pack, targets, selectors_in_order, digest, total, text, docs, stamp, degraded,
                  degrade if degraded else None)


def _hidden_prerequisite(ws: Workspace, principal: str | None, pack: str, selector: str) -> Exception:
    """The denial for a flash that needs a doc the principal may not read: it names ``selector`` (a doc the
    principal may read, or one it asked for), never the hidden one, here or in the audit log."""
    who = access.effective_principal(ws, principal)
    return access.deny(ws, principal, "flash", doc_id(pack, selector), "read", pack, selector,
                       hint=f"it needs docs you may not read; ask an admin for `agentcontext grant {who} {pack} read`")


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
