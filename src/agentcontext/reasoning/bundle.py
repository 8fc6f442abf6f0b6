"""The cited context: sources in order, numbered, within a token budget, rendered as the text a model reads.

``ContextBundle.messages()`` is exactly what ``query_with_reasoning`` sends (the fixed ``INSTRUCTIONS`` as
the system message, ``text`` as the user message); ``context_for`` and the MCP tool ``get_context`` return
the same bundle, so an agent that reasons by itself reads what the model would have read.

Budget: sources are taken best first while they fit in ``budget_tokens`` (cl100k tokens of ``text``, the
header and the question included); one that does not fit is cut to the room left if at least
``MIN_TRUNCATED`` tokens remain (``truncated: true``), else left out (listed in ``dropped``) and the next
ones are still tried. If not even the header, the question and the smallest source fit, the call raises
``BudgetExceededError`` rather than hand over an empty context.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ..errors import BudgetExceededError
from ..tokens import count_tokens, truncate_tokens
from .sources import Source

MIN_TRUNCATED = 48
HEADER = ("Sources for the question at the end. Each begins with its number in brackets; cite a source by "
          "that number, e.g. [1] or [2][3].")
INSTRUCTIONS = (
    "Answer the question using only the numbered sources in the user message. After each sentence that uses "
    "a source, cite it by its number in square brackets, like [1] or [1][3]; cite only sources that support "
    "the sentence. Sources may be linked: one reached from another says so, with the path between them. If "
    "the sources do not contain the answer, say that plainly and cite nothing. Do not use outside knowledge.")


@dataclass
class ContextBundle:
    query: str
    sources: list[Source]
    text: str
    tokens: int
    budget_tokens: int | None
    dropped: list[dict[str, Any]] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    instructions: str = INSTRUCTIONS
    config: dict[str, Any] = field(default_factory=dict)  # the echo of the RetrievalConfig that ran

    @property
    def num_sources(self) -> int:
        return len(self.sources)

    def label_of(self, source_id: str) -> int | None:
        for i, s in enumerate(self.sources, 1):
            if s.id == source_id:
                return i
        return None

    def messages(self) -> list[dict[str, str]]:
        """What query_with_reasoning sends: the instructions, then the cited context and the question."""
        return [{"role": "system", "content": self.instructions}, {"role": "user", "content": self.text}]

    @property
    def reasoning_path(self) -> list[dict[str, Any]]:
        """For each source in order: how it came in (its search, or the hops from the seed that reached it)."""
        out = []
        for i, s in enumerate(self.sources, 1):
            entry: dict[str, Any] = {"label": i, "source": s.id, "origin": s.origin, "hops": s.hops,
                                     "steps": list(s.steps)}
            if s.seed is not None:
                entry["seed"] = s.seed
                entry["seed_label"] = self.label_of(s.seed)
            out.append(entry)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "num_sources": self.num_sources,
                "sources": [s.to_dict(i) for i, s in enumerate(self.sources, 1)],
                "reasoning_path": self.reasoning_path, "tokens": self.tokens, "budget_tokens": self.budget_tokens,
                "dropped": self.dropped, "skipped": self.skipped, "instructions": self.instructions,
                "text": self.text, "config": self.config}


def _path_text(source: Source, labels: dict[str, int]) -> str:
    seed = source.seed or ""
    start = f"[{labels[seed]}]" if seed in labels else seed
    hops = []
    for step in source.steps:
        to = step["to_title"] or step["to"]
        hops.append(f"-[{step['edge']}]-> {to}" if step["direction"] == "out" else f"<-[{step['edge']}]- {to}")
    return f"reached from {start} " + " ".join(hops)


def _block(label: int, source: Source, labels: dict[str, int], content: str) -> str:
    head = f"[{label}] {source.kind} {source.id}"
    if source.title and source.title != source.id and source.kind != "memory":
        head += f" \"{source.title}\""
    if source.steps:
        head += f" ({_path_text(source, labels)})"
    return f"{head}\n{content}"


def assemble(query: str, ranked: Sequence[Source], budget_tokens: int | None,
             skipped: dict[str, str] | None = None) -> ContextBundle:
    """Number and render ``ranked`` (best first) within the budget."""
    tail = f"Question: {query}"
    fixed = count_tokens(f"{HEADER}\n\n\n\n{tail}")
    used = fixed
    blocks: list[str] = []
    included: list[Source] = []
    labels: dict[str, int] = {}
    dropped: list[dict[str, Any]] = []
    for source in ranked:
        label = len(included) + 1
        text = _block(label, source, labels, source.content)
        need = count_tokens(text) + 1
        if budget_tokens is not None and used + need > budget_tokens:
            head_tokens = count_tokens(_block(label, source, labels, "")) + 1
            room = budget_tokens - used - head_tokens
            if room < MIN_TRUNCATED:
                dropped.append({"id": source.id, "kind": source.kind, "score": round(source.score, 4),
                                "tokens": need, "why": "budget"})
                continue
            source.content = truncate_tokens(source.content, room)
            source.truncated = True
            text = _block(label, source, labels, source.content)
            need = count_tokens(text) + 1
        source.tokens = need - 1
        used += need
        blocks.append(text)
        included.append(source)
        labels[source.id] = label
    text = "\n\n".join([HEADER, *blocks, tail])
    tokens = count_tokens(text)
    while budget_tokens is not None and tokens > budget_tokens and included:  # BPE joins can differ by a token
        gone = included.pop()
        blocks.pop()
        dropped.append({"id": gone.id, "kind": gone.kind, "score": round(gone.score, 4), "tokens": gone.tokens,
                        "why": "budget"})
        text = "\n\n".join([HEADER, *blocks, tail])
        tokens = count_tokens(text)
    if budget_tokens is not None and ranked and not included:
        smallest = min(d["tokens"] for d in dropped)
        largest = sorted(dropped, key=lambda d: -d["tokens"])[:5]
        raise BudgetExceededError(
            f"budget_tokens={budget_tokens} leaves no room for any source: the header and question take {fixed} "
            f"tokens and the smallest source needs {min(smallest, MIN_TRUNCATED)} more; raise the budget",
            needed=fixed + min(smallest, MIN_TRUNCATED), budget=budget_tokens,
            largest=[{"id": d["id"], "tokens": d["tokens"]} for d in largest])
    return ContextBundle(query=query, sources=included, text=text, tokens=tokens, budget_tokens=budget_tokens,
                         dropped=dropped, skipped=dict(skipped or {}))
