"""EntityLinker: seed 003's examples, resolution rules with explanations, entity web, graph edges."""
from __future__ import annotations

import pytest

from agentcontext import ContextGraph, EntityLink, EntityLinker, LinkedEntity, ValidationError, Workspace
from agentcontext.entities import core_name, initials, normalize


def test_seed_example_runs_and_apple_is_one_entity() -> None:
    linker = EntityLinker(similarity_threshold=0.8)
    uri = linker.assign_uri("apple_inc", "Apple Inc.", "ORGANIZATION")
    assert uri == "https://agentcontext.dev/entity/apple_inc.#organization"
    entities = [
        {"id": "e1", "text": "Apple Inc.", "type": "ORGANIZATION"},
        {"id": "e2", "text": "Apple", "type": "ORGANIZATION"},
    ]
    linked = linker.link(text="Apple Inc. was founded by Steve Jobs.", entities=entities)
    lines = ["{} → {}  (confidence: {:.2f})".format(e.text, e.uri, e.confidence) for e in linked]
    assert lines == [f"Apple Inc. → {uri}  (confidence: 1.00)", f"Apple → {uri}  (confidence: 0.95)"]
    assert all(isinstance(e, LinkedEntity) and e.entity_id == "apple_inc" for e in linked)
    assert linked[1].context["resolution"]["rule"] == "legal_suffix"
    assert linked[1].linked_entities[0] == EntityLink("e2", "apple_inc", "same_as", 0.95, "legal_suffix",
                                                      {"rule": "legal_suffix", "surface": "Apple"})
    linker.link_entities(entity1_id="apple_inc", entity2_id="aapl", link_type="same_as", confidence=0.99)
    web = linker.build_entity_web()
    assert web["statistics"]["total_entities"] == 2 and web["statistics"]["total_links"] == 1
    assert web["links"] == [{"source_entity_id": "apple_inc", "target_entity_id": "aapl", "link_type": "same_as",
                             "confidence": 0.99}]


def test_apple_apple_inc_and_aapl_resolve_to_one_node_each_rule_explained() -> None:
    linker = EntityLinker()
    uri = linker.assign_uri("apple", "Apple Inc.", "ORG")
    got = {text: linker.resolve(text, "ORG") for text in ("Apple Inc.", "apple inc", "Apple", "Apple Incorporated",
                                                         "AAPL")}
    assert {t: (r.entity_id, r.rule, r.score) for t, r in got.items()} == {
        "Apple Inc.": ("apple", "exact_name", 1.0), "apple inc": ("apple", "exact_name", 1.0),
        "Apple": ("apple", "legal_suffix", 0.95), "Apple Incorporated": ("apple", "legal_suffix", 0.95),
        "AAPL": ("apple", "alias", 0.9)}
    for text in ("Apple", "AAPL"):
        assert linker.assign_uri(text.lower(), text, "ORG") == uri
    assert linker.graph.stats()["node_types"] == {"entity": 1}
    assert set(linker.get_entity("apple")["aliases"]) == {"Apple", "AAPL"}
    assert linker.resolve("AAPL", "ORG", mention_id="aapl").rule == "id"  # the alias id is remembered


def test_acronym_and_embedding_rules() -> None:
    linker = EntityLinker(similarity_threshold=0.8)
    linker.assign_uri("ibm", "International Business Machines Corporation", "ORG")
    res = linker.resolve("IBM", "ORG")
    assert (res.entity_id, res.rule) == ("ibm", "alias")  # the ticker table knows IBM
    linker.assign_uri("who", "World Health Organization", "ORG")
    res = linker.resolve("WHO", "ORG")
    assert (res.entity_id, res.rule, res.score) == ("who", "acronym", 0.85)
    assert linker.resolve("who", "ORG").entity_id is None  # lower-case "who" is a word, not an acronym
    linker.assign_uri("obama", "Barack Obama", "PERSON")
    res = linker.resolve("President Barack Obama", "PERSON")
    assert (res.entity_id, res.rule) == ("obama", "embedding") and res.score >= 0.8
    other = linker.resolve("Michelle Obama", "PERSON")
    assert other.entity_id is None and other.rule == "new"
    assert any("embedding" in r["reason"] and "< 0.8" in r["reason"] for r in other.rejected)
    strict = EntityLinker(similarity_threshold=0.99, graph=linker.graph)  # same entities, stricter threshold
    assert strict.resolve("President Barack Obama", "PERSON").entity_id is None


def test_same_surface_form_different_type_or_context_stays_apart() -> None:
    linker = EntityLinker()
    company = linker.assign_uri("apple_co", "Apple", "ORG")
    fruit = linker.assign_uri("apple_fruit", "Apple", "FOOD")
    assert company != fruit
    res = linker.resolve("Apple", "FOOD")
    assert res.entity_id == "apple_fruit"
    assert res.rejected == [{"entity_id": "apple_co", "reason": "type FOOD differs from ORG"}]
    jordan_nba = linker.assign_uri("jordan_nba", "Michael Jordan", "PERSON", context={"domain": "basketball"})
    jordan_ml = linker.assign_uri("jordan_ml", "Michael Jordan", "PERSON", context={"domain": "machine learning"})
    assert jordan_nba != jordan_ml
    linked = linker.link("Michael Jordan wrote on graphical models",
                         entities=[{"id": "m1", "text": "Michael Jordan", "type": "PERSON",
                                    "context": {"domain": "machine learning"}}])
    assert linked[0].entity_id == "jordan_ml"
    assert linked[0].context["resolution"]["rejected"][0]["entity_id"] == "jordan_nba"
    assert linker.build_entity_web()["statistics"]["entity_types"] == {"ORG": 1, "FOOD": 1, "PERSON": 2}


def test_link_without_entities_finds_known_names_and_new_capitalised_mentions() -> None:
    linker = EntityLinker(use_embeddings=False)
    linker.assign_uri("acme", "Acme Corp", "ORG")
    linked = linker.link("Yesterday acme corp hired Grace Hopper.")
    got = {(e.text, e.entity_id) for e in linked}
    assert ("Acme Corp", "acme") in got
    assert any(e.text == "Grace Hopper" and e.context["resolution"]["rule"] == "new" for e in linked)


def test_link_entities_takes_two_ids_and_same_as_shares_aliases() -> None:
    linker = EntityLinker(use_embeddings=False)
    linker.assign_uri("google", "Google LLC", "ORG")
    linker.assign_uri("alphabet", "Alphabet Inc.", "ORG")
    link = linker.link_entities("google", "alphabet", "part_of", confidence=0.9, source="10-K")
    assert link == EntityLink("google", "alphabet", "part_of", 0.9, "10-K", {})
    with pytest.raises(ValidationError):
        linker.link_entities(["google", "alphabet"], "x")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        linker.link_entities("google", "alphabet", confidence=1.5)
    assert linker.resolve("Googleplex", "ORG").entity_id is None
    linker.link_entities("google", "alphabet", "same_as", 0.8)
    assert linker.resolve("Alphabet", "ORG").entity_id in {"google", "alphabet"}
    assert "Alphabet Inc." in linker.get_entity("google")["aliases"]
    edges = linker.graph.find_edges(source_id="google")
    assert sorted((e["type"], e["weight"]) for e in edges) == [("part_of", 0.9), ("same_as", 0.8)]
    web = linker.build_entity_web()
    assert web["statistics"]["link_types"] == {"part_of": 1, "same_as": 1}
    assert {e["entity_id"] for e in web["entities"]} == {"google", "alphabet"}


def test_entities_live_in_the_graph_and_memories_get_edges(tmp_path) -> None:
    ws = Workspace.open(home=tmp_path / ".agentcontext", create=True)
    graph = ContextGraph(workspace=ws)
    linker = EntityLinker(graph=graph)
    linker.assign_uri("acme", "Acme GmbH", "ORG")
    graph.add_node("mem_1", "memory", content="Acme signed the contract")
    assert linker.attach("mem_1", ["acme"]) == 1
    assert [n["id"] for n in graph.get_neighbors("acme", direction="in")] == ["mem_1"]
    node = graph.find_node("acme")
    assert node["type"] == "entity" and node["properties"]["uri"].endswith("acme_gmbh#org")
    again = EntityLinker(graph=ContextGraph(workspace=ws))  # a new linker over the same store knows the entity
    assert again.resolve("ACME", "ORG").entity_id == "acme"
    ws.close()


def test_name_helpers() -> None:
    assert normalize("  Société  Générale, S.A. ") == "societe generale s a"
    assert core_name("Apple Inc.") == "apple" and core_name("Inc") == "inc"
    assert core_name("Siemens AG") == "siemens" and core_name("Acme Holdings Ltd.") == "acme holdings"
    assert initials("Bank of America Corp") == "ba"
    with pytest.raises(ValidationError):
        EntityLinker(similarity_threshold=0)
