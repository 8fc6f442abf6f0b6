"""The retrieval-only LoCoMo protocol (shared/data/locomo/README.md).

One memory per dialogue turn (speaker in the metadata, image captions appended as text the agent
saw), one in-memory store per conversation, every question asked except category 5
(adversarial), scored by evidence recall at k: the share of a question's evidence turns found in
the top k (partial), and whether all of them were (full). Evidence ids are normalised
(``D:11:26`` -> ``D11:26``, ``"D8:6; D9:17"`` split); questions left with no evidence turn that
exists in the conversation are skipped and counted.
"""
from __future__ import annotations

import json
import re
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Sequence

from .embed.base import Embedder, default_embedder
from .embed.models import load_model
from .errors import ValidationError
from .memory import AgentMemory
from .vector_store import VectorStore

_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")
Progress = Callable[[str, int, int], None]


def session_date(text: str) -> str | None:
    """'1:56 pm on 8 May, 2023' -> '2023-05-08T13:56:00'."""
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(text.strip(), fmt).isoformat()
        except ValueError:
            continue
    return None


def turns(sample: dict[str, Any]) -> list[dict[str, Any]]:
    conv = sample["conversation"]
    out = []
    n = 1
    while f"session_{n}" in conv:
        date_text = conv.get(f"session_{n}_date_time", "")
        for turn in conv[f"session_{n}"]:
            out.append({**turn, "session": n, "session_date": date_text, "created_at": session_date(date_text)})
        n += 1
    return out


def turn_text(turn: dict[str, Any]) -> str:
    text = turn.get("text", "")
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


def evidence(raw: Sequence[str], known: set[str]) -> set[str]:
    found = {f"D{m.group(1)}:{m.group(2)}" for e in raw for m in _EVIDENCE.finditer(str(e))}
    return found & known


def load(path: str | Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValidationError(f"cannot read LoCoMo file {path}: {exc}", path=str(path)) from exc
    if not isinstance(data, list) or not all(isinstance(s, dict) and "conversation" in s and "qa" in s for s in data):
        raise ValidationError(f"{path} is not a LoCoMo file: expected a list of samples with conversation and qa",
                              path=str(path))
    return data


def evaluate(path: str | Path, ks: Sequence[int] = (1, 5, 10), embedder: Embedder | None = None,
             progress: Progress | None = None, memory_options: dict[str, Any] | None = None,
             model: str | None = None, rerank: bool = False, rewrite: Any = None) -> dict[str, Any]:
    """Run the protocol over every sample of ``path``; returns recall at each k and per category. ``model``: a
    registered embedding model (embed/models.py) instead of the default; ``rerank``: memory search's reranker on
    (engine/rerank.py); ``rewrite``: a provider, and the result's ``rewrite`` row scores the same questions
    through ``retrieve_rewritten`` (memory/rewrite.py) with the provider's round trip per question."""
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] <= 0:
        raise ValidationError("k values must be positive integers", k=list(ks))
    samples = load(path)
    embedder = embedder or (load_model(model) if model else default_embedder())  # type: ignore[assignment]
    memory_options = {**(memory_options or {}), **({"rerank": True} if rerank else {})}
    start = time.perf_counter()
    partial = {k: 0.0 for k in ks}
    full = {k: 0 for k in ks}
    cats: dict[str, dict[str, Any]] = {}
    asked = skipped = 0
    row = Rewritten(ks) if rewrite is not None else None
    total_q = sum(1 for s in samples for q in s["qa"] if q.get("category") != 5)
    for sample in samples:
        sid = str(sample.get("sample_id", "conv"))
        memory = AgentMemory(VectorStore(backend="inmemory", embedder=embedder), max_memory_size=10**9,
                             **(memory_options or {}))
        ts = turns(sample)
        memory.batch_store([
            {"content": turn_text(t), "conversation_id": sid,
             "metadata": {"speaker": t.get("speaker", ""), "dia_id": t["dia_id"], "session": t["session"],
                          "session_date": t["session_date"]},
             "created_at": t["created_at"]} for t in ts])
        known = {t["dia_id"] for t in ts}
        for qa in sample["qa"]:
            if qa.get("category") == 5:
                continue
            ev = evidence(qa.get("evidence") or [], known)
            if not ev:
                skipped += 1
                continue
            asked += 1
            found = memory.retrieve(str(qa["question"]), max_results=ks[-1])
            ranked = [r["metadata"].get("dia_id") for r in found]
            cat = cats.setdefault(str(qa.get("category")), {"questions": 0, **{f"recall@{k}": 0.0 for k in ks}})
            cat["questions"] += 1
            for k in ks:
                hit = len(ev & set(ranked[:k]))
                partial[k] += hit / len(ev)
                full[k] += hit == len(ev)
                cat[f"recall@{k}"] += hit / len(ev)
            if row is not None:
                row.ask(memory, rewrite, str(qa["question"]), ev, str(qa.get("category")))
            if progress:
                progress("questions", asked + skipped, total_q)
        memory.workspace.close()
    for cat in cats.values():
        for k in ks:
            cat[f"recall@{k}"] = round(cat[f"recall@{k}"] / max(cat["questions"], 1), 4)
    result = {
        "file": str(path), "model": embedder.name, "rerank": bool(memory_options.get("rerank")),
        "conversations": len(samples), "questions": asked, "skipped_no_evidence": skipped,
        "k": ks,
        "recall": {str(k): round(partial[k] / max(asked, 1), 4) for k in ks},
        "full_recall": {str(k): round(full[k] / max(asked, 1), 4) for k in ks},
        "by_category": dict(sorted(cats.items())),
        "seconds": round(time.perf_counter() - start, 1),
    }
    if row is not None:
        result["rewrite"] = row.summary(rewrite.model)
    return result


class Rewritten:
    """The ``--rewrite`` row: recall through ``retrieve_rewritten``, fallbacks, and the provider's cost."""

    def __init__(self, ks: Sequence[int]) -> None:
        self.ks = list(ks)
        self.partial = {k: 0.0 for k in ks}
        self.full = {k: 0 for k in ks}
        self.cats: dict[str, dict[str, Any]] = {}
        self.asked = 0
        self.fallbacks: dict[str, int] = {}
        self.seconds: list[float] = []
        self.provider_ms: list[float] = []

    def ask(self, memory: AgentMemory, provider: Any, question: str, ev: set[str], category: str) -> None:
        from .memory.rewrite import retrieve_rewritten

        started = time.perf_counter()
        found = retrieve_rewritten(memory, provider, question, max_results=self.ks[-1], count_use=False)
        self.seconds.append(time.perf_counter() - started)
        self.asked += 1
        fallback = found[0]["signals"]["rewrite"]["fallback"] if found else None
        self.provider_ms.append(found[0]["signals"]["rewrite"]["provider_ms"] if found else 0.0)
        if fallback:
            self.fallbacks[fallback] = self.fallbacks.get(fallback, 0) + 1
        ranked = [r["metadata"].get("dia_id") for r in found]
        cat = self.cats.setdefault(category, {"questions": 0, **{f"recall@{k}": 0.0 for k in self.ks}})
        cat["questions"] += 1
        for k in self.ks:
            hit = len(ev & set(ranked[:k]))
            self.partial[k] += hit / len(ev)
            self.full[k] += hit == len(ev)
            cat[f"recall@{k}"] += hit / len(ev)

    def summary(self, model: str | None) -> dict[str, Any]:
        n = max(self.asked, 1)
        for cat in self.cats.values():
            for k in self.ks:
                cat[f"recall@{k}"] = round(cat[f"recall@{k}"] / max(cat["questions"], 1), 4)
        times, calls = sorted(self.seconds) or [0.0], sorted(self.provider_ms) or [0.0]
        return {"model": model, "questions": self.asked, "fallbacks": dict(sorted(self.fallbacks.items())),
                "recall": {str(k): round(self.partial[k] / n, 4) for k in self.ks},
                "full_recall": {str(k): round(self.full[k] / n, 4) for k in self.ks},
                "by_category": dict(sorted(self.cats.items())),
                "ms_per_question_p50": round(1000 * times[len(times) // 2], 2),
                "ms_per_question_max": round(1000 * times[-1], 2),
                "provider_ms_p50": calls[len(calls) // 2], "provider_ms_max": calls[-1]}
