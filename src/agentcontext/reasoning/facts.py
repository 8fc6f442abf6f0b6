"""``store(text, infer=True)``: facts and entities extracted by a model, each resolved against similar memories.

Opt-in only: without ``infer`` a memory is stored raw and no model is involved (the offline default).

1. **Extract** (one call, JSON checked against ``EXTRACT_SCHEMA``): the durable facts the text states, as
   short standalone sentences, each with the entities it names; and the text's entities with a type.
2. **Find** each fact's similar memories: the memory retriever's best ``CANDIDATES`` per fact scoring at
   least ``SIMILAR``, in the same user's (else conversation's, else the whole store's) memories.
3. **Resolve** (one call, JSON checked against ``RESOLVE_SCHEMA``): per fact ``add`` (new), ``update`` (an
   existing memory, with the merged text), ``delete`` (an existing memory the fact makes untrue) or
   ``none`` (already known). Existing memories are shown to the model by number, never by id, and a
   reference to a number it was not shown is a ``ProviderError``: nothing is written on a bad answer.
4. **Apply**, in one store transaction: ``add`` stores a memory; ``update`` writes a new version of the
   memory; ``delete`` writes a version carrying the provenance and then retracts it (history and ``as_of``
   keep it; ``forget`` is still the way to erase). Every version written carries ``metadata["provenance"]``:
   the method, provider, model, action, the model's reason, the fact, and the source text's sha256 and
   length, so each change says where it came from (a caller who keeps the text, say its chat log, can match
   it). The source text itself is not copied into the memories: one text gives several facts about different
   people, and a copy in each would outlive the erasure of any one of them (erasing Jane's fact would leave
   her card in Bob's provenance, where no search for her finds it). A fact's entities go to
   ``metadata["entities"]``, which links the memory to the graph like any other memory.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

from ..errors import ProviderError, ValidationError
from ..model import utcnow
from ..seams import Completes, MemoryLike

CANDIDATES = 5
SIMILAR = 0.35
MAX_EXISTING = 30
ACTIONS = ("add", "update", "delete", "none")

EXTRACT_SCHEMA = {
    "type": "object",
    "properties": {
        "facts": {"type": "array", "maxItems": 50, "items": {
            "type": "object", "required": ["text"],
            "properties": {"text": {"type": "string", "minLength": 1},
                           "entities": {"type": "array", "items": {"type": "string", "minLength": 1}}}}},
        "entities": {"type": "array", "items": {
            "type": "object", "required": ["name"],
            "properties": {"name": {"type": "string", "minLength": 1}, "type": {"type": "string"}}}},
    },
    "required": ["facts"],
}
RESOLVE_SCHEMA = {
    "type": "object",
    "properties": {"actions": {"type": "array", "items": {
        "type": "object", "required": ["fact", "action"],
        "properties": {"fact": {"type": "integer", "minimum": 0}, "action": {"enum": list(ACTIONS)},
                       "memory": {"type": "integer", "minimum": 0}, "text": {"type": "string"},
                       "reason": {"type": "string"}}}}},
    "required": ["actions"],
}
EXTRACT_PROMPT = (
    "Extract the durable facts stated in the user's text: preferences, plans, relationships, events with their "
    "dates, decisions, attributes of people, places, organisations and things. Write each fact as one short "
    "standalone sentence that names its subject (no pronouns without a referent). Skip greetings, questions and "
    "filler. List each fact's named entities, and the text's entities with a type (person, organisation, place, "
    "product, technology, event, other). If there is no fact, return an empty list.")
RESOLVE_PROMPT = (
    "You maintain a memory store. For each new fact, compare it with the existing memories shown and choose one "
    "action: \"add\" if it is new information; \"update\" with the number of an existing memory it refines, "
    "extends or corrects, and \"text\" set to the merged memory; \"delete\" with the number of an existing "
    "memory the fact makes untrue (the fact itself is then added too, if it is worth keeping, as another "
    "action); \"none\" if an existing memory already says it. Give a short reason for each action. Refer to "
    "memories only by the numbers shown.")


def infer_and_store(memory: MemoryLike, llm: Completes | None, text: str, *, metadata: dict[str, Any] | None = None,
                    conversation_id: str | None = None, user_id: str | None = None) -> dict[str, Any]:
    """Extract, resolve and apply (see the module docstring); returns what was done, fact by fact."""
    if not isinstance(text, str) or not text.strip():
        raise ValidationError("store(..., infer=True) needs one non-empty text")
    if not isinstance(llm, Completes):
        raise ValidationError("store(..., infer=True) needs an LLM provider: AgentContext(llm_provider=...) or "
                              "store(..., infer=True, llm_provider=...) with an agentcontext.llms provider")
    # before any model call: a principal who may not write sends no text to a provider
    memory.check("write", "memory.store")
    extracted = llm.complete(text, system=EXTRACT_PROMPT, json_schema=EXTRACT_SCHEMA, temperature=0)
    facts = [{"text": f["text"].strip(), "entities": list(dict.fromkeys(f.get("entities") or []))}
             for f in extracted.data["facts"] if f["text"].strip()]
    entities = extracted.data.get("entities") or []
    usage = [extracted]
    if not facts:
        return _report([], facts, entities, usage)
    existing = _similar(memory, facts, conversation_id, user_id)
    resolved = llm.complete(json.dumps({"existing_memories": [{"number": i, "text": m["content"]}
                                                              for i, m in enumerate(existing)],
                                        "new_facts": [{"number": i, "text": f["text"]}
                                                      for i, f in enumerate(facts)]}, ensure_ascii=False),
                            system=RESOLVE_PROMPT, json_schema=RESOLVE_SCHEMA, temperature=0)
    usage.append(resolved)
    plan = _plan(resolved.data["actions"], facts, existing, resolved)
    source = {"source_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(), "source_chars": len(text),
              "method": "llm_inference", "provider": resolved.provider, "model": resolved.model}
    results = _apply(memory, plan, facts, existing, source, metadata, conversation_id, user_id)
    return _report(results, facts, entities, usage)


def _similar(memory: MemoryLike, facts: list[dict[str, Any]], conversation_id: str | None,
             user_id: str | None) -> list[dict[str, Any]]:
    scope = {"user_id": user_id} if user_id is not None else (
        {"conversation_id": conversation_id} if conversation_id is not None else {})
    seen: dict[str, dict[str, Any]] = {}
    for fact in facts:
        for hit in memory.retrieve(fact["text"], max_results=CANDIDATES, min_score=SIMILAR, **scope):
            if hit["id"] not in seen or hit["score"] > seen[hit["id"]]["score"]:
                seen[hit["id"]] = hit
    return sorted(seen.values(), key=lambda m: (-m["score"], m["id"]))[:MAX_EXISTING]


def _plan(actions: list[dict[str, Any]], facts: list[dict[str, Any]], existing: list[dict[str, Any]],
          completion: Any) -> list[dict[str, Any]]:
    """The model's actions, checked before anything is written; a fact it skipped is added."""
    def bad(why: str) -> ProviderError:
        return ProviderError(f"{completion.provider} gave an unusable memory resolution: {why}; nothing was "
                             "stored (retry, or use a stronger model)", provider=completion.provider, status=200,
                             reason="malformed_output", model=completion.model)

    plan: list[dict[str, Any]] = []
    touched: set[int] = set()
    for a in actions:
        if a["fact"] >= len(facts):
            raise bad(f"fact {a['fact']} does not exist (there are {len(facts)})")
        if a["action"] in ("update", "delete"):
            if "memory" not in a or a["memory"] >= len(existing):
                raise bad(f"{a['action']} of memory {a.get('memory')!r}, which was not shown")
            if a["memory"] in touched:
                raise bad(f"memory {a['memory']} is changed twice")
            touched.add(a["memory"])
            if a["action"] == "update" and not (a.get("text") or "").strip():
                raise bad(f"update of memory {a['memory']} without the merged text")
        plan.append(a)
    decided = {a["fact"] for a in plan}
    plan += [{"fact": i, "action": "add", "reason": "no action was given for this fact"}
             for i in range(len(facts)) if i not in decided]
    return plan


def _apply(memory: MemoryLike, plan: list[dict[str, Any]], facts: list[dict[str, Any]], existing: list[dict[str, Any]],
           source: dict[str, Any], metadata: dict[str, Any] | None, conversation_id: str | None,
           user_id: str | None) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    added: set[str] = set()
    with memory.db.transaction():
        for a in plan:
            fact = facts[a["fact"]]
            reason = str(a.get("reason") or "")
            provenance = {**source, "action": a["action"], "reason": reason, "fact": fact["text"], "at": utcnow()}
            if a["action"] == "add":
                content = (a.get("text") or "").strip() or fact["text"]
                if content in added:
                    continue
                added.add(content)
                meta = {**(metadata or {}), "provenance": provenance}
                if fact["entities"]:
                    meta["entities"] = fact["entities"]
                mid = memory.store(content, metadata=meta, conversation_id=conversation_id, user_id=user_id)
                results.append({"event": "ADD", "id": mid, "memory": content, "fact": fact["text"],
                                "reason": reason})
            elif a["action"] == "update":
                old = existing[a["memory"]]
                content = a["text"].strip()
                ents = list(dict.fromkeys([*(old.get("metadata") or {}).get("entities", []), *fact["entities"]]))
                meta = {"provenance": {**provenance, "previous_version": old.get("version")}}
                if ents:
                    meta["entities"] = ents
                memory.update(old["id"], content=content, metadata=meta)
                results.append({"event": "UPDATE", "id": old["id"], "memory": content,
                                "previous_memory": old["content"], "fact": fact["text"], "reason": reason})
            elif a["action"] == "delete":
                old = existing[a["memory"]]
                memory.update(old["id"], metadata={"provenance": {**provenance,
                                                                  "previous_version": old.get("version")}})
                memory.db.retract_nodes([old["id"]], actor=memory.principal or "")
                results.append({"event": "DELETE", "id": old["id"], "memory": old["content"], "fact": fact["text"],
                                "reason": reason})
            else:
                results.append({"event": "NONE", "id": None, "memory": fact["text"], "fact": fact["text"],
                                "reason": reason})
    return results


def _report(results: list[dict[str, Any]], facts: list[dict[str, Any]], entities: list[Any],
            completions: list[Any]) -> dict[str, Any]:
    def total(key: str) -> int | None:
        values = [c.usage.to_dict()[key] for c in completions]
        return None if all(v is None for v in values) else sum(v or 0 for v in values)

    return {"results": results, "facts": facts, "entities": entities,
            "usage": {"input_tokens": total("input_tokens"), "output_tokens": total("output_tokens"),
                      "total_tokens": total("total_tokens"), "calls": len(completions)}}
