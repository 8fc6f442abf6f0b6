"""Entities found in text (issue 11 s3, without an LLM): memories, messages and stored records are linked to
the known entities whose names, aliases, tickers or initials they contain (graph/mentions.py)."""
from __future__ import annotations

import random
import re

import numpy as np
import pytest

from agentcontext import AgentContext, AgentMemory, ContextGraph, EntityLinker, ValidationError, Workspace
from agentcontext.engine.mentions import MentionMatcher
from agentcontext.engine.names import normalize


def vec(ws: Workspace, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(ws.embedder.dimension).astype(np.float32)
    return v / np.linalg.norm(v)


def text_links(ws: Workspace, memory_id: str) -> dict[str, dict]:
    return {e.dst: e.props for e in ws.store.edges(src=[memory_id], type="mentions")}


def test_alice_works_at_acme_links_to_the_existing_acme_node() -> None:
    graph = ContextGraph()
    graph.add_node("Acme", "company")
    graph.add_node("alice", "person", properties={"name": "Alice Smith", "aliases": ["Alice"]})
    ctx = AgentContext(knowledge_graph=graph)
    mid = ctx.store("Alice works at Acme")
    links = text_links(graph.workspace, mid)
    assert set(links) == {graph.store_id("Acme"), graph.store_id("alice")}
    assert links[graph.store_id("Acme")]["via"] == "text" and links[graph.store_id("Acme")]["rule"] == "exact_name"
    assert [n["id"] for n in graph.get_neighbors("Acme", direction="in", relationship_types=["mentions"])] == [mid]
    assert graph.stats()["node_types"]["company"] == 1  # linked to Acme, no second Acme node
    # no graph_expansion: the context does not link memories to the graph
    plain = AgentContext(knowledge_graph=ContextGraph(), graph_expansion=False)
    plain.knowledge_graph.add_node("Acme", "company")
    assert text_links(plain.memory.workspace, plain.store("Alice works at Acme")) == {}


def test_the_linker_rules_in_text() -> None:
    graph = ContextGraph()
    graph.add_node("acme", "company", properties={"name": "Acme Corp."})
    graph.add_node("acme_labs", "company", properties={"name": "Acme Labs"})
    graph.add_node("apple", "company", properties={"name": "Apple Inc."})
    graph.add_node("ibm", "company", properties={"name": "International Business Machines"})
    graph.add_node("who", "org", properties={"name": "World Health Organization"})
    graph.add_node("ai", "topic", properties={"name": "AI"})
    found = {(m["entity"], m["rule"], m["surface"]) for m in graph.find_mentions(
        "acme corp and Acme Labs met AAPL, IBM and the WHO about AI; Acme signed.")}
    assert found == {("acme", "exact_name", "acme corp"), ("acme_labs", "exact_name", "Acme Labs"),
                     ("apple", "alias", "AAPL"), ("ibm", "alias", "IBM"), ("who", "acronym", "WHO"),
                     ("ai", "exact_name", "AI")}
    count = {m["entity"]: m["count"] for m in graph.find_mentions("Acme Corp, then Acme again; Acme Labs once")}
    assert count == {"acme": 2, "acme_labs": 1}  # the longest name wins; each occurrence counted once
    # lower-case tickers, acronyms and short names are ordinary words
    assert graph.find_mentions("who said ai is ibm or aapl? the apple of my eye") == [
        {"entity": "apple", "surface": "apple", "rule": "legal_suffix", "score": 0.95, "count": 1,
         "ambiguous": False}]
    graph.add_node("acme_fr", "company", properties={"name": "Acme SA"})  # two entities under one name
    amb = [m for m in graph.find_mentions("Acme shipped") if m["ambiguous"]]
    assert sorted(m["entity"] for m in amb) == ["acme", "acme_fr"]


def test_the_matcher_follows_the_graph_entity_by_entity() -> None:
    graph = ContextGraph()
    mem = AgentMemory(workspace=graph.workspace, context_turns=False, entity_graph=graph)
    graph.add_node("globex", "company", properties={"name": "Globex"})
    first = mem.batch_store([{"content": "Globex and Initech merged", "vector": vec(graph.workspace, 1)}])[0]
    assert set(text_links(graph.workspace, first)) == {graph.store_id("globex")}
    graph.add_node("initech", "company", properties={"name": "Initech"})  # added after the matcher was built
    graph.retract_node("globex")
    second = mem.batch_store([{"content": "Globex and Initech merged again", "vector": vec(graph.workspace, 2)}])[0]
    assert set(text_links(graph.workspace, second)) == {graph.store_id("initech")}
    # the bulk path links what was stored before the entity existed, and a second run adds nothing
    assert mem.link_mentions() == {"scanned": 2, "linked": 1}
    assert set(text_links(graph.workspace, first)) >= {graph.store_id("initech")}
    assert mem.link_mentions()["linked"] == 0
    # a changed text is linked again: the old text's links go
    mem.update(first, content="Only Initech is left")
    assert set(text_links(graph.workspace, first)) == {graph.store_id("initech")}
    mem.update(first, content="Nobody is left")
    assert text_links(graph.workspace, first) == {}
    with pytest.raises(ValidationError, match="entity_graph"):
        AgentMemory(workspace=graph.workspace).link_mentions()


def test_metadata_entities_and_text_links_are_not_doubled() -> None:
    graph = ContextGraph()
    graph.add_node("acme", "company", properties={"name": "Acme"})
    mem = AgentMemory(workspace=graph.workspace, context_turns=False, entity_graph=graph)
    mid = mem.batch_store([{"content": "Acme called", "metadata": {"entities": ["acme"]},
                            "vector": vec(graph.workspace, 3)}])[0]
    edges = graph.workspace.store.edges(src=[mid], type="mentions")
    assert len(edges) == 1 and "via" not in (edges[0].props or {})  # the metadata's link, kept as it was
    # an entity named as a model writes it ("ACME corp", "acme") resolves to the known node, not a new one
    graph.add_node("globex", "company", properties={"name": "Globex Corporation"})
    mid = mem.batch_store([{"content": "a call", "metadata": {"entities": ["ACME corp", "globex corp", "Initech"]},
                            "vector": vec(graph.workspace, 4)}])[0]
    assert {e.dst for e in graph.workspace.store.edges(src=[mid], type="mentions")} == {
        graph.store_id("acme"), graph.store_id("globex"), graph.store_id("Initech")}
    assert graph.stats()["node_types"] == {"company": 2, "entity": 1, "memory": 2}


def test_bulk_linking_of_stored_docs_and_records(tmp_path) -> None:
    ws = Workspace.open(home=tmp_path / ".agentcontext", create=True)
    graph = ContextGraph(workspace=ws)
    mem = AgentMemory(workspace=ws, context_turns=False)  # stored without a graph: no links yet
    ids = mem.batch_store([{"content": f"note {i} about Umbrella", "vector": vec(ws, i)}
                           for i in range(3)] + [{"content": "nothing here", "vector": vec(ws, 9)}])
    graph.add_node("umbrella", "company", properties={"name": "Umbrella Corporation"})
    graph.add_node("d1", "decision", content="We chose Umbrella as supplier")
    assert graph.link_mentions() == {"scanned": 5, "linked": 4}
    assert graph.link_mentions()["linked"] == 0
    into = {n["id"] for n in graph.get_neighbors("umbrella", direction="in", relationship_types=["mentions"])}
    assert into == set(ids[:3]) | {"d1"}
    assert {e.props["rule"] for e in ws.store.edges(src=ids[:3], type="mentions")} == {"legal_suffix"}
    ws.close()


def test_build_from_conversations_uses_message_text() -> None:
    graph = ContextGraph()
    graph.add_node("globex", "company", properties={"name": "Globex Corporation"})
    out = graph.build_from_conversations([
        {"id": "c1", "messages": [{"role": "user", "content": "I met Bob from Globex"},
                                  {"role": "agent", "content": "Apple called too"}],
         "entities": [{"id": "e1", "text": "Apple Inc.", "type": "ORG"}]},
        {"id": "c2", "messages": [{"role": "user", "content": "AAPL is up, and Globex?"}]},
    ])
    assert out["message_mentions"] == 4
    into = {n["id"] for n in graph.get_neighbors("globex", direction="in", relationship_types=["mentions"])}
    assert into == {"c1#m0", "c2#m0"}
    into = {n["id"] for n in graph.get_neighbors("e1", direction="in", relationship_types=["mentions"])}
    assert into == {"c1", "c1#m1", "c2#m0"}  # "Apple" and "AAPL" in the text resolve to Apple Inc.
    with pytest.raises(TypeError):
        graph.build_from_conversations([], link_entitites=True)  # type: ignore[call-arg]


def test_entity_linker_finds_names_with_the_matcher_and_refuses_unknown_options() -> None:
    linker = EntityLinker(use_embeddings=False)
    linker.assign_uri("apple", "Apple Inc.", "ORG")
    linked = linker.link("Shares of AAPL rose")
    assert [(e.entity_id, e.text) for e in linked][:1] == [("apple", "Apple Inc.")]
    assert not any(e.text == "AAPL" and e.entity_id != "apple" for e in linked)
    with pytest.raises(TypeError):
        EntityLinker(similarity_treshold=0.9)  # type: ignore[call-arg]


def test_scan_agrees_with_a_regex_oracle_on_random_texts() -> None:
    rng = random.Random(3)
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "zeta"]
    names = sorted({" ".join(rng.sample(words, rng.randint(1, 3))).title() for _ in range(25)})
    matcher = MentionMatcher(alias_names={})
    for i, name in enumerate(names):
        matcher.add(f"e{i}", [name])
    for _ in range(200):
        text = " ".join(rng.choice(words + ["the", "and", "x"]) for _ in range(rng.randint(1, 12)))
        got = {e for m in matcher.scan(text) for e in m.entities}
        # every entity the matcher finds has its name in the text, and every name found in the text is found
        # unless a longer name overlapping it was taken (leftmost-longest, as the module says)
        for e in got:
            assert re.search(rf"\b{re.escape(normalize(names[int(e[1:])]))}\b", normalize(text))
        present = {f"e{i}" for i, n in enumerate(names) if re.search(rf"\b{re.escape(normalize(n))}\b", text.lower())}
        assert got <= present
        for e in present - got:
            span = normalize(names[int(e[1:])])
            assert any(span in normalize(names[int(g[1:])]) or normalize(names[int(g[1:])]) in span
                       or len(set(span.split()) & set(normalize(names[int(g[1:])]).split())) for g in got)


def test_an_erased_entity_takes_its_text_links_and_is_no_longer_found(tmp_path) -> None:
    from agentcontext import VectorStore
    from agentcontext.erasure import erase_workspace_entity

    ws = Workspace.open(home=tmp_path / ".agentcontext", create=True)
    graph = ContextGraph(workspace=ws)
    graph.add_node("acme", "company", properties={"name": "Acme Corp"})
    ctx = AgentContext(vector_store=VectorStore(workspace=ws), knowledge_graph=graph)
    mid = ctx.store("Alice works at Acme")
    assert [e.props["via"] for e in ws.store.edges(src=[mid], type="mentions")] == ["text"]
    receipt = erase_workspace_entity(ws, graph.store_id("acme"), reason="test")
    assert [m["id"] for m in receipt.mentions] == [mid]  # the text link made the memory a listed mention
    assert ws.store.edges(src=[mid], type="mentions") == []
    assert text_links(ws, ctx.store("Acme again")) == {}  # the erased name is no longer matched
    ws.close()
