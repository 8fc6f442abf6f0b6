"""The LangChain adapter (integrations.langchain) beyond langchain-tests' standard suites (tests/framework/langchain):
what the retriever ranks, the principal's grants, erasure, a missing langchain-core."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("langchain_core")

from agentcontext import access  # noqa: E402
from agentcontext.erasure import erase_workspace_entity  # noqa: E402
from agentcontext.errors import AccessDeniedError, DependencyMissingError, ValidationError  # noqa: E402
from agentcontext.integrations.langchain import AgentContextRetriever, agentcontext_tools  # noqa: E402
from agentcontext.memory.service import workspace_memory  # noqa: E402

from .test_access import build_workspace  # noqa: E402


@pytest.fixture
def filled(ws):
    build_workspace(ws)
    workspace_memory(ws).store("Ana's onboarding buddy is Ravi.", metadata={"entities": ["ana"]},
                               conversation_id="hr", user_id="ana")
    workspace_memory(ws).store("The canteen closes at three.", conversation_id="misc")
    return ws


def test_memories_and_docs_in_one_ranking_best_first(filled):
    docs = AgentContextRetriever(workspace=filled, k=3).invoke("who is the onboarding buddy?")
    assert docs[0].page_content == "Ana's onboarding buddy is Ravi." and docs[0].metadata["source"] == "memory"
    scores = [d.metadata["score"] for d in docs]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    cited = {d.id for d in docs}
    assert cited & {"lib:open#guide", "lib:open#basics", "lib:secret#salaries"}  # docs carry <pack>#<selector>
    guide = next(d for d in AgentContextRetriever(workspace=filled, k=10, memory_namespace=None).invoke("guide")
                 if d.id == "lib:open#guide")
    assert guide.page_content == "The onboarding guide builds on the basics." and guide.metadata["selector"] == "guide"
    only_memories = AgentContextRetriever(workspace=filled, packs=[], k=10).invoke("onboarding")
    assert {d.metadata["source"] for d in only_memories} == {"memory"}
    assert AgentContextRetriever(workspace=filled, packs=[], conversation_id="misc").invoke("onboarding")[0] \
        .page_content == "The canteen closes at three."
    with pytest.raises(ValidationError):
        AgentContextRetriever(workspace=filled).invoke("x", top_k=2)


def denied(ws, who):
    return [r for r in ws.store.audit(principal=who) if r["outcome"] == "denied"]


def test_a_stranger_is_refused_and_audited_and_a_reader_sees_only_its_packs(filled):
    with pytest.raises(AccessDeniedError):
        AgentContextRetriever(workspace=filled, principal="mallory").invoke("onboarding")
    assert len(denied(filled, "mallory")) == 1
    reader = AgentContextRetriever(workspace=filled, principal="reader", memory_namespace=None, k=10)
    assert {d.metadata["pack"] for d in reader.invoke("onboarding salary")} == {"lib:open"}  # never lib:secret
    with pytest.raises(AccessDeniedError):
        AgentContextRetriever(workspace=filled, principal="reader", memory_namespace=None,
                              packs=["lib:secret"]).invoke("salary")
    tools = {t.name: t for t in agentcontext_tools(filled, principal="reader")}
    assert [p["pack"] for p in json.loads(tools["list_knowledge_packs"].invoke({}))] == ["lib:open"]
    for name, args in (("read_knowledge_doc", {"pack": "lib:secret", "selector": "salaries"}),
                       ("search_knowledge", {"pack": "lib:secret", "query": "salary"}),
                       ("list_knowledge_neighbors", {"pack": "lib:secret", "selector": "bonus"}),
                       ("flash", {"pack": "lib:secret", "selector": "bonus"})):
        with pytest.raises(AccessDeniedError):
            tools[name].invoke(args)
    assert len(denied(filled, "reader")) == 5
    access.grant(filled, "reader", "memory:default", "read")
    assert AgentContextRetriever(workspace=filled, principal="reader", packs=[]).invoke("buddy")


def test_after_an_erasure_the_retriever_finds_nothing_of_the_subject(filled):
    assert "Ravi" in AgentContextRetriever(workspace=filled, packs=[], k=1).invoke("onboarding buddy")[0].page_content
    erase_workspace_entity(filled, "ana")
    found = AgentContextRetriever(workspace=filled, packs=[], k=5).invoke("onboarding buddy")
    assert [d.page_content for d in found] == ["The canteen closes at three."]


def test_without_langchain_core_the_import_names_the_extra():
    code = ("import sys; sys.modules['langchain_core'] = None\n"
            "try:\n    import agentcontext.integrations.langchain\n"
            "except Exception as exc:\n    print(type(exc).__name__, exc)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.startswith(DependencyMissingError.__name__), proc.stderr
    assert "pip install 'agentcontext[langchain]'" in proc.stdout


@pytest.mark.postgres
def test_the_retriever_on_postgresql_ranks_as_on_sqlite(pg_url, ws):
    from agentcontext.workspace import Workspace

    pg = Workspace.open(url=pg_url)
    try:
        for each in (ws, pg):
            build_workspace(each)
            workspace_memory(each).store("Ana's onboarding buddy is Ravi.", conversation_id="hr")
            workspace_memory(each).store("The canteen closes at three.", conversation_id="misc")
        ranked = [[(d.id if d.metadata["source"] == "doc" else d.page_content) for d in
                   AgentContextRetriever(workspace=each, k=4).invoke("who is the onboarding buddy?")]
                  for each in (ws, pg)]
        assert ranked[0] == ranked[1] and ranked[0][0] == "Ana's onboarding buddy is Ravi."
        with pytest.raises(AccessDeniedError):
            AgentContextRetriever(workspace=pg, principal="mallory").invoke("buddy")
    finally:
        pg.close()
