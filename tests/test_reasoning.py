"""context_for and query_with_reasoning: a cited context from memories, docs, decisions and the graph, with
paths for what expansion brought in, a token budget, access rules, and answers from a scripted model on
127.0.0.1 whose citations are checked against the sources."""
from __future__ import annotations

import re

import pytest

from agentcontext import AgentContext, ContextGraph, ContextRetriever, Workspace
from agentcontext import access
from agentcontext.errors import BudgetExceededError, ProviderError, ValidationError
from agentcontext.knowledge.packs import install_folder
from agentcontext.llms import Anthropic, OpenAICompatible
from agentcontext.model import Edge
from agentcontext.reasoning.answer import ground
from agentcontext.reasoning.service import ReasoningService
from tests.llm_server import Reply, ScriptedServer, anthropic_reply, openai_error, openai_reply

QUESTION = "Why did we choose PostgreSQL for billing?"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """One workspace: a graph with entities and typed edges, memories linked to them, a decision, a pack."""
    root = tmp_path_factory.mktemp("reasoning")
    ws = Workspace.open(home=root / ".agentcontext", create=True)
    graph = ContextGraph(workspace=ws)
    ctx = AgentContext(knowledge_graph=graph, decision_tracking=True, retention_days=None)
    graph.add_nodes([{"id": "postgresql", "type": "technology", "content": "PostgreSQL, a relational database"},
                     {"id": "acme", "type": "company", "content": "Acme Corp, the client billing serves"}])
    graph.add_edges([{"source": "acme", "target": "postgresql", "type": "runs_on"}])
    ids = {
        "why": ctx.store("We chose PostgreSQL for billing because its ACID transactions keep invoices "
                         "consistent.", metadata={"entities": ["postgresql"]}, user_id="u1"),
        "dana": ctx.store("Dana runs the database cluster and is on call at weekends.",
                          metadata={"entities": ["postgresql"]}, user_id="u1"),
        "private": ctx.store("u2's own note on database tuning.", metadata={"entities": ["postgresql"]},
                             user_id="u2"),
        "noise": ctx.store("The cafeteria serves pasta on Fridays.", user_id="u1"),
    }
    ids["decision"] = ctx.record_decision(category="technology", scenario="Choose the billing database",
                                          reasoning="ACID transactions and mature tooling", outcome="postgresql",
                                          confidence=0.9, entities=["postgresql"], decision_maker="cto")
    pack = root / "pack-arch"
    (pack / "docs").mkdir(parents=True)
    (pack / "docs" / "database.md").write_text("Billing stores invoices in PostgreSQL; backups run nightly.",
                                               encoding="utf-8")
    (pack / "manifest.yaml").write_text(
        "schema: nenjo.knowledge.v1\nslug: arch\nmanifest:\n  name: arch\n  pack_id: arch\n  docs:\n"
        "    - selector: stack.database\n      source_path: docs/database.md\n      title: Billing database\n"
        "      summary: Why billing runs on PostgreSQL and how it is backed up.\n", encoding="utf-8")
    install_folder(ws, pack)
    yield ctx, ids, ws
    ws.close()


def reasoning(ctx, principal=None) -> ReasoningService:
    """The context's own reasoning service, or the same services seen by another principal."""
    if principal is None:
        return ctx.reasoning
    return ReasoningService(ctx.retriever, graph=ctx.knowledge_graph, workspace=ctx.memory.workspace,
                            decisions=ctx.decisions, principal=principal)


# --- the cited context -----------------------------------------------------------------------------
def test_sources_have_stable_ids_from_every_kind(world):
    ctx, ids, _ = world
    bundle = reasoning(ctx).context_for(QUESTION, max_results=10, max_hops=2)
    by_id = {s.id: s for s in bundle.sources}
    assert ids["why"] in by_id and by_id[ids["why"]].kind == "memory"
    assert by_id[ids["why"]].origin == "memory_search"
    assert "lib:arch#stack.database" in by_id and by_id["lib:arch#stack.database"].kind == "doc"
    assert ids["decision"] in by_id and by_id[ids["decision"]].kind == "decision"
    assert all(0.0 <= s.score <= 1.0 for s in bundle.sources)
    scores = [s.score for s in bundle.sources]
    assert scores == sorted(scores, reverse=True)
    labels = [f"[{i}] " for i in range(1, bundle.num_sources + 1)]
    assert all(label in bundle.text for label in labels) and bundle.text.endswith(f"Question: {QUESTION}")
    for s in bundle.sources:
        assert s.content in bundle.text


def test_expansion_brings_in_linked_sources_with_their_path(world):
    ctx, ids, _ = world
    # Seeded by the decision alone: the memories come in two hops away, through the entity they all name.
    bundle = reasoning(ctx).context_for("billing database choice", max_results=10, max_hops=2,
                                        include=["decisions"], user_id="u1")
    paths = {p["source"]: p for p in bundle.reasoning_path}
    assert paths[ids["decision"]]["origin"] == "decision_search" and paths[ids["decision"]]["steps"] == []
    entity = paths["graph:default/postgresql"]
    assert entity["hops"] == 1 and entity["seed"] == ids["decision"] and entity["seed_label"] == 1
    assert entity["steps"] == [{"from": ids["decision"], "from_title": "Choose the billing database",
                                "edge": "involves", "to": "graph:default/postgresql", "to_title": "postgresql",
                                "direction": "out"}]
    for key in ("why", "dana"):
        p = paths[ids[key]]
        assert p["origin"] == "graph_expansion" and p["hops"] == 2
        assert [(s["edge"], s["direction"]) for s in p["steps"]] == [("involves", "out"), ("mentions", "in")]
        assert p["steps"][0]["to"] == p["steps"][1]["from"] and p["steps"][1]["to"] == ids[key]
    assert ids["private"] not in paths and ids["noise"] not in paths  # u2's memory; one that names nothing
    acme = paths["graph:default/acme"]
    assert [s["edge"] for s in acme["steps"]] == ["involves", "runs_on"]
    by_id = {s.id: s for s in bundle.sources}
    seed = by_id[ids["decision"]]
    assert by_id["graph:default/postgresql"].score == pytest.approx(seed.score * 0.5)
    assert by_id[ids["dana"]].score == pytest.approx(seed.score * 0.25)
    assert "(reached from [1] -[involves]-> postgresql <-[mentions]- " in bundle.text
    one = reasoning(ctx).context_for("billing database choice", max_results=10, max_hops=1, include=["decisions"])
    assert {s.id for s in one.sources} == {ids["decision"], "graph:default/postgresql"}
    none = reasoning(ctx).context_for("billing database choice", max_results=10, max_hops=0, include=["decisions"])
    assert [s.id for s in none.sources] == [ids["decision"]]


def test_graph_nodes_the_query_names_come_with_their_relations(world):
    ctx, _, _ = world
    bundle = reasoning(ctx).context_for("What runs on postgresql?", max_results=10, max_hops=1,
                                        include=["graph"])
    node = next(s for s in bundle.sources if s.id == "graph:default/postgresql")
    assert node.origin == "graph_match" and node.kind == "technology" and 0 < node.score <= 1
    assert "<-[runs_on]- acme" in node.content
    assert any(s.id == "graph:default/acme" and s.hops == 1 for s in bundle.sources)


def test_user_filters_and_access_hold_through_expansion(world):
    ctx, ids, ws = world
    seen = {s.id for s in reasoning(ctx).context_for(QUESTION, max_results=20, max_hops=3,
                                                     user_id="u1").sources}
    assert ids["private"] not in seen and ids["why"] in seen
    everyone = {s.id for s in reasoning(ctx).context_for(QUESTION, max_results=20, max_hops=3).sources}
    assert ids["private"] in everyone
    access.grant(ws, "reader", "lib:arch", "read")  # reader may read the pack, nothing else
    bundle = reasoning(ctx, principal="reader").context_for(QUESTION, max_results=20, max_hops=3)
    assert {s.kind for s in bundle.sources} == {"doc"}
    assert bundle.skipped == {"memories": "no read access to memory:default",
                              "decisions": "no read access to graph:default",
                              "graph": "no read access to graph:default"}
    nobody = reasoning(ctx, principal="stranger").context_for(QUESTION, max_results=20, max_hops=3)
    assert nobody.sources == [] and "lib:arch" not in nobody.text


def test_the_budget_is_respected_and_reported(world):
    ctx, _, _ = world
    full = reasoning(ctx).context_for(QUESTION, max_results=10, budget_tokens=None)
    tight = reasoning(ctx).context_for(QUESTION, max_results=10, budget_tokens=120)
    assert tight.tokens <= 120 < full.tokens
    assert tight.num_sources < full.num_sources and tight.dropped
    assert {d["why"] for d in tight.dropped} == {"budget"}
    assert [s.id for s in tight.sources] == [s.id for s in full.sources if s.id not in
                                             {d["id"] for d in tight.dropped}]
    from agentcontext.tokens import count_tokens

    assert count_tokens(tight.text) == tight.tokens
    with pytest.raises(BudgetExceededError) as err:
        reasoning(ctx).context_for(QUESTION, budget_tokens=30)
    assert err.value.data["budget"] == 30


def test_bad_arguments_and_truth_filter_are_refused(world):
    ctx, _, _ = world
    service = reasoning(ctx)
    for kwargs in ({"max_results": 0}, {"max_hops": -1}, {"budget_tokens": 0}, {"include": ["everything"]},
                   {"include": "memories"}, {"min_score": 2}, {"colour": "blue"}):
        with pytest.raises(ValidationError):
            service.context_for(QUESTION, **kwargs)
    with pytest.raises(ValidationError):
        service.context_for("  ")
    for call in (lambda: service.context_for(QUESTION, truth_filter=object()),
                 lambda: ctx.context_for(QUESTION, truth_filter=object()),
                 lambda: ctx.query_with_reasoning(QUESTION, llm_provider=object(), truth_filter=object()),
                 lambda: service.query_with_reasoning(QUESTION, llm_provider=object(), truth_filter=object()),
                 lambda: ContextRetriever(memory_store=ctx.memory).query_with_reasoning(
                     QUESTION, llm_provider=object(), truth_filter=object())):
        with pytest.raises(ValidationError, match="truth_filter"):
            call()
    with pytest.raises(ValidationError, match="llm_provider"):
        service.query_with_reasoning(QUESTION)


# --- grounded answers from a scripted model ------------------------------------------------------------
def cite_first_two(request):
    """A model that answers from the context it was sent, citing the first two numbered sources."""
    text = request.body["messages"][-1]["content"]
    labels = re.findall(r"^\[(\d+)\] ", text, flags=re.M)
    return openai_reply(f"Billing runs on PostgreSQL for its transactions [{labels[0]}]. "
                        f"The decision was the CTO's [{labels[1]}].", usage=(321, 17))


def test_query_with_reasoning_sends_the_cited_context_and_checks_citations(world):
    ctx, ids, _ = world
    with ScriptedServer(cite_first_two) as server:
        llm = OpenAICompatible(base_url=server.url + "/v1", model="m")
        result = ctx.query_with_reasoning(query=QUESTION, llm_provider=llm, max_hops=2, max_results=10)
    bundle = ctx.context_for(QUESTION, max_results=10, max_hops=2)
    (request,) = server.requests
    assert request.body["messages"] == bundle.messages()  # exactly what context_for gives an agent
    assert ids["why"] in request.body["messages"][1]["content"]
    assert result["response"].startswith("Billing runs on PostgreSQL")
    assert result["num_sources"] == bundle.num_sources == len(result["sources"])
    assert [c["id"] for c in result["citations"]] == [s.id for s in bundle.sources[:2]]
    assert result["unknown_citations"] == []
    parts = result["confidence_parts"]
    assert parts["coverage"] == 1.0 and parts["precision"] == 1.0
    # support: how far the cited sources hold what each sentence says (answer.py); relevance: their scores
    assert parts["relevance"] == pytest.approx((bundle.sources[0].score + bundle.sources[1].score) / 2, abs=1e-4)
    assert 0 < parts["support"] <= 1 and result["confidence"] == pytest.approx(parts["support"], abs=1e-4)
    assert result["usage"] == {"input_tokens": 321, "output_tokens": 17, "total_tokens": 338}
    assert result["context_tokens"] == bundle.tokens and result["reasoning_path"] == bundle.reasoning_path


@pytest.mark.parametrize("answer, coverage, precision, unknown", [
    ("PostgreSQL keeps invoices consistent [1]. It was cheap [9].", 0.5, 0.5, ["9"]),
    ("PostgreSQL keeps invoices consistent [1][mem_nonexistent]. Nothing else.", 0.5, 0.5, ["mem_nonexistent"]),
    ("The sources do not say.", 0.0, 0.0, []),
])
def test_confidence_follows_coverage_and_invented_citations(world, answer, coverage, precision, unknown):
    ctx, _, _ = world
    bundle = reasoning(ctx).context_for(QUESTION, max_results=5)
    g = ground(answer, bundle)
    assert (g.coverage, g.precision, g.unknown) == (coverage, precision, unknown)
    assert g.confidence == pytest.approx(coverage * precision * g.support, abs=1e-4)
    by_id = ground(f"Consistent invoices [{bundle.sources[0].id}].", bundle)
    assert by_id.citations == [1] and by_id.confidence == pytest.approx(by_id.support, abs=1e-4)
    assert by_id.relevance == pytest.approx(bundle.sources[0].score, abs=1e-4)


def test_no_sources_means_no_model_call(world):
    ctx, _, _ = world
    with ScriptedServer([openai_reply("should not be asked")]) as server:
        llm = OpenAICompatible(base_url=server.url + "/v1", model="m")
        result = reasoning(ctx, principal="stranger").query_with_reasoning(QUESTION, llm_provider=llm)
    assert server.requests == [] and result["num_sources"] == 0 and result["confidence"] == 0.0
    assert result["citations"] == [] and "nothing" in result["response"]


def test_provider_failures_surface(world):
    ctx, _, _ = world
    with ScriptedServer([openai_error(401, "bad key")]) as server:
        llm = OpenAICompatible(base_url=server.url + "/v1", model="m", api_key="k")
        with pytest.raises(ProviderError) as err:
            reasoning(ctx).query_with_reasoning(QUESTION, llm_provider=llm)
    assert err.value.reason == "auth"
    with ScriptedServer([openai_reply("")]) as server:
        llm = OpenAICompatible(base_url=server.url + "/v1", model="m")
        with pytest.raises(ProviderError):
            reasoning(ctx).query_with_reasoning(QUESTION, llm_provider=llm)


def test_anthropic_and_generate_only_providers(world):
    ctx, _, _ = world

    def reply(request):
        assert request.body["system"].startswith("Answer the question using only")
        return anthropic_reply("Invoices stay consistent [1].")

    with ScriptedServer(reply) as server:
        llm = Anthropic(model="claude-x", api_key="ak", base_url=server.url)
        result = reasoning(ctx).query_with_reasoning(QUESTION, llm_provider=llm, max_results=3)
    assert result["citations"][0]["label"] == 1 and result["provider"] == "anthropic"

    class SemanticaStyle:
        model = "mine"

        def generate(self, prompt, **kwargs):
            assert "Question: " + QUESTION in prompt
            return "Consistency [2]."

    out = reasoning(ctx).query_with_reasoning(QUESTION, llm_provider=SemanticaStyle(), max_results=3)
    assert [c["label"] for c in out["citations"]] == [2] and out["usage"]["total_tokens"] is None


def test_a_retry_on_the_way_is_invisible_to_the_answer(world):
    ctx, _, _ = world
    with ScriptedServer([Reply(503, {"error": {"message": "busy"}}), openai_reply("Consistency [1].")]) as server:
        llm = OpenAICompatible(base_url=server.url + "/v1", model="m", backoff=0.01)
        result = reasoning(ctx).query_with_reasoning(QUESTION, llm_provider=llm, max_results=3)
    assert len(server.requests) == 2 and result["citations"][0]["label"] == 1


# --- the seed's Multi-Hop GraphRAG example ---------------------------------------------------------------
def label_of(context: str, needle: str) -> str:
    """The number of the source block in ``context`` whose text contains ``needle``."""
    for block in re.split(r"\n\n(?=\[\d+\] )", context):
        m = re.match(r"\[(\d+)\] ", block)
        if m and needle in block:
            return m.group(1)
    raise AssertionError(f"no source holds {needle!r}")


def test_the_seed_multihop_example_runs_against_an_openai_compatible_server(tmp_path):
    import os
    import subprocess
    import sys

    from tests.conftest import EXAMPLES

    def model(request):
        context = request.body["messages"][1]["content"]
        pg, kafka = label_of(context, "PostgreSQL for billing"), label_of(context, "Kafka keeps ordered")
        return openai_reply(f"PostgreSQL runs billing because its transactions keep invoices consistent [{pg}]. "
                            f"Kafka carries order events so consumers can replay them [{kafka}].", usage=(900, 40))

    with ScriptedServer(model) as server:  # the seed's Groq(...), pointed at this server by GROQ_BASE_URL
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTCONTEXT_", "LLM_"))}
        env.update(GROQ_API_KEY="gsk-test", GROQ_BASE_URL=server.url + "/openai/v1")
        proc = subprocess.run([sys.executable, str(EXAMPLES / "multihop_graphrag.py")], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (request,) = server.requests
    assert request.path == "/openai/v1/chat/completions" and request.body["model"] == "llama-3.3-70b-versatile"
    assert request.headers["authorization"] == "Bearer gsk-test"
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("PostgreSQL runs billing")
    confidence = float(next(x for x in lines if x.startswith("Confidence: ")).split()[1])
    assert 0.0 < confidence <= 1.0
    assert int(next(x for x in lines if x.startswith("Sources used: ")).split()[2]) >= 3
    assert sum(x.startswith("  cited [") for x in lines) == 2
    assert "Tokens: context " in proc.stdout and "model 940" in proc.stdout


def test_the_entity_link_type_is_the_one_memory_writes():
    from agentcontext.memory.links import MENTIONS
    from agentcontext.reasoning import sources

    assert sources.MENTIONS == MENTIONS


def test_a_provider_given_at_construction_is_used_and_checked(world):
    ctx, _, _ = world
    with pytest.raises(ValidationError):
        AgentContext(vector_store=ctx.vector_store, llm_provider="groq")
    with pytest.raises(ValidationError):
        AgentContext(vector_store=ctx.vector_store, infer=True)  # nothing to infer with
    with ScriptedServer([openai_reply("Consistency [1].")]) as server:
        llm = OpenAICompatible(base_url=server.url + "/v1", model="m")
        own = AgentContext(vector_store=ctx.vector_store, knowledge_graph=ctx.knowledge_graph, llm_provider=llm)
        assert own.query_with_reasoning(QUESTION, max_results=3)["citations"][0]["label"] == 1
    assert len(server.requests) == 1


def test_a_graph_node_never_names_a_neighbour_the_principal_may_not_read(world):
    ctx, _, ws = world  # runs last: it adds an edge to the shared world
    graph = ctx.knowledge_graph
    graph.store.put_edges([Edge(src=graph.store_id("postgresql"), type="documented_in", dst="lib:arch/stack.database",
                                namespace=graph.namespace)])
    access.grant(ws, "grapher", "graph:default", "read")  # the graph, not the pack
    query = "What runs on postgresql?"
    owner = {s.id: s for s in reasoning(ctx).context_for(query, include=["graph"], max_hops=1).sources}
    assert "-[documented_in]-> Billing database" in owner["graph:default/postgresql"].content
    seen = {s.id: s for s in reasoning(ctx, principal="grapher").context_for(query, include=["graph"],
                                                                              max_hops=2).sources}
    node = seen["graph:default/postgresql"]
    assert "<-[runs_on]- acme" in node.content and "Billing database" not in node.content
    assert "lib:arch#stack.database" not in seen
    assert all("stack.database" not in step["to"] for s in seen.values() for step in s.steps)
