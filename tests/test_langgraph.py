"""The LangGraph adapter in a real graph: a ``StateGraph`` with ``AgentContextSaver`` and ``AgentContextStore`` on one
SQLite file, two threads, an interrupt resumed after the process' objects were closed and reopened, long-term
memory written in one thread and found by ``search`` in the other; ``delete_thread``, ``store.delete`` and an
erasure of the user leave none of the text in the store's files; a stranger is refused and audited; a missing
LangGraph raises our error naming the extra."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import TypedDict

import pytest

pytest.importorskip("langgraph.graph")

from langchain_core.runnables import RunnableConfig  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.store.base import BaseStore  # noqa: E402
from langgraph.types import Command, interrupt  # noqa: E402

from agentcontext import access  # noqa: E402
from agentcontext.erasure.workspace import erase_workspace_entity  # noqa: E402
from agentcontext.errors import AccessDeniedError, DependencyMissingError  # noqa: E402
from agentcontext.integrations import require  # noqa: E402
from agentcontext.integrations.langgraph import AgentContextSaver, AgentContextStore  # noqa: E402
from agentcontext.workspace import Workspace  # noqa: E402

from .bytescan import hits, new_secret, store_files  # noqa: E402

INDEX = {"fields": ["text"]}  # agentcontext's own embedder


class State(TypedDict, total=False):
    text: str
    answer: str
    found: list[str]


def remember(state: State, config: RunnableConfig, *, store: BaseStore) -> State:
    user = config["configurable"]["user_id"]
    store.put(("memories", user), config["configurable"]["thread_id"], {"text": state["text"]})
    return {}


def approve(state: State) -> State:
    return {"answer": interrupt({"question": f"keep {state['text']!r}?"})}


def recall(state: State, config: RunnableConfig, *, store: BaseStore) -> State:
    user = config["configurable"]["user_id"]
    return {"found": [h.value["text"] for h in store.search(("memories", user), query=state["text"], limit=2)]}


def build(saver, store):
    graph = StateGraph(State)
    graph.add_node("remember", remember)
    graph.add_node("approve", approve)
    graph.add_node("recall", recall)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "approve")
    graph.add_edge("approve", "recall")
    graph.add_edge("recall", END)
    return graph.compile(checkpointer=saver, store=store)


def conf(thread: str, user: str = "u1") -> RunnableConfig:
    return {"configurable": {"thread_id": thread, "user_id": user}}


def test_two_threads_interrupt_resume_and_memory_across_threads(tmp_path):
    url = f"sqlite:///{tmp_path}/lg.db"
    with AgentContextSaver.from_conn_string(url) as saver, AgentContextStore.from_conn_string(url, index=INDEX) as st:
        first = build(saver, st).invoke({"text": "I always drink green tea with jasmine in the morning"},
                                        conf("t1"))
        assert first["__interrupt__"][0].value == {"question": "keep 'I always drink green tea with jasmine in the "
                                                               "morning'?"}
        assert build(saver, st).get_state(conf("t1")).next == ("approve",)
    # a new process' objects on the same file: the paused thread resumes where it stopped
    with AgentContextSaver.from_conn_string(url) as saver, AgentContextStore.from_conn_string(url, index=INDEX) as st:
        graph = build(saver, st)
        done = graph.invoke(Command(resume="yes"), conf("t1"))
        assert done["answer"] == "yes" and done["found"][0].startswith("I always drink green tea")
        graph.invoke({"text": "which hot drink do I like?"}, conf("t2"))
        second = graph.invoke(Command(resume="no"), conf("t2"))
        assert "I always drink green tea with jasmine in the morning" in second["found"]
        hit = st.search(("memories", "u1"), query="tea in the morning")[0]
        assert hit.key == "t1" and 0.0 <= hit.score <= 1.0
        assert [c.config["configurable"]["thread_id"] for c in saver.list(None, limit=100)].count("t1") >= 4
        assert graph.get_state(conf("t1")).values["answer"] == "yes"
        assert graph.get_state(conf("t2")).values["answer"] == "no"
        # the items are memories of memory:default, about the namespace's labels
        node = [n for n in st.room.find() if n.props["langgraph"].get("key") == "t1"][0]
        assert node.kind == "memory" and node.namespace == "memory:default"
        assert "u1" in node.props["metadata"]["entities"]


def _simple_graph(saver):
    graph = StateGraph(State)
    graph.add_node("approve", approve)
    graph.add_edge(START, "approve")
    graph.add_edge("approve", END)
    return graph.compile(checkpointer=saver)


def test_delete_thread_leaves_no_byte_of_its_state(tmp_path):
    db = tmp_path / "lg.db"
    secret, kept = new_secret(), new_secret()
    with AgentContextSaver.from_conn_string(str(db)) as saver:
        graph = _simple_graph(saver)
        graph.invoke({"text": f"the code is {secret}"}, conf("gone"))
        graph.invoke({"text": f"the code is {kept}"}, conf("kept"))
        assert hits(store_files(db), secret), "the thread's state is in the file before the delete"
        saver.delete_thread("gone")
        assert hits(store_files(db), secret) == {}
        assert saver.get_tuple(conf("gone")) is None
        assert graph.get_state(conf("kept")).values["text"] == f"the code is {kept}"
    assert hits(store_files(db), secret) == {} and hits(store_files(db), kept)


def test_store_delete_leaves_no_byte_of_the_item(tmp_path):
    db = tmp_path / "lg.db"
    secret = new_secret()
    with AgentContextStore.from_conn_string(str(db), index=INDEX) as st:
        st.put(("memories", "u1"), "card", {"text": f"my card number is {secret}"})
        st.put(("memories", "u1"), "card", {"text": f"my card number is still {secret}"})  # a second version
        st.put(("memories", "u1"), "other", {"text": "something else entirely"})
        assert st.search(("memories",), query="card number")[0].key == "card"
        assert hits(store_files(db), secret)
        st.delete(("memories", "u1"), "card")
        assert hits(store_files(db), secret) == {}
        assert st.get(("memories", "u1"), "card") is None
        assert [i.key for i in st.search(("memories",), query="card number")] == ["other"]


def test_erasing_the_user_removes_their_items_and_thread_state(tmp_path):
    db = tmp_path / "lg.db"
    secret, other = new_secret(), new_secret()
    with AgentContextSaver.from_conn_string(str(db)) as saver, AgentContextStore.from_conn_string(str(db)) as st:
        graph = _simple_graph(saver)
        graph.invoke({"text": f"note {secret}"}, conf("t-u1", "u1"))
        graph.invoke({"text": f"note {other}"}, conf("t-u2", "u2"))
        st.put(("memories", "u1"), "k", {"text": f"remember {secret}"})
        st.put(("memories", "u2"), "k", {"text": f"remember {other}"})
        receipt = erase_workspace_entity(saver.ws, "u1", reason="user asked")
        assert receipt.stores["memory"]["status"] == "erased"
        assert saver.get_tuple(conf("t-u1", "u1")) is None and st.get(("memories", "u1"), "k") is None
        assert saver.get_tuple(conf("t-u2", "u2")) is not None and st.get(("memories", "u2"), "k") is not None
        assert hits(store_files(db), secret) == {}
        assert hits(store_files(db), other)


def test_a_stranger_is_refused_and_audited(tmp_path):
    url = f"sqlite:///{tmp_path}/lg.db"
    ws = Workspace.open(url=url, create=True)
    try:
        access.grant(ws, "alice", "memory:default", "write")
        alice, mallory = AgentContextStore(ws, principal="alice"), AgentContextStore(ws, principal="mallory")
        alice.put(("notes",), "a", {"text": "alice's note"})
        assert alice.get(("notes",), "a").value == {"text": "alice's note"}
        with pytest.raises(AccessDeniedError):
            mallory.get(("notes",), "a")
        with pytest.raises(AccessDeniedError):
            mallory.put(("notes",), "b", {"text": "x"})
        saver = AgentContextSaver(ws, principal="mallory")
        with pytest.raises(AccessDeniedError):
            _simple_graph(saver).invoke({"text": "hi"}, conf("m"))
        with pytest.raises(AccessDeniedError):
            saver.delete_thread("anything")
        denied = [r for r in ws.store.audit(principal="mallory") if r["outcome"] == "denied"]
        assert len(denied) == 4 and {r["target"] for r in denied} >= {"memory:default"}
        assert [r for r in ws.store.audit(principal="alice") if r["action"] == "langgraph_store_put"]
    finally:
        ws.close()


def test_a_missing_framework_names_the_extra():
    with pytest.raises(DependencyMissingError, match=r"pip install 'agentcontext\[langgraph\]'"):
        require("langgraph_that_is_not_installed", extra="langgraph")
    code = ("import sys; sys.modules['langgraph'] = None\n"
            "from agentcontext.errors import DependencyMissingError\n"
            "try:\n    from agentcontext.integrations.langgraph import AgentContextSaver\n"
            "except DependencyMissingError as e:\n    print('EXTRA', e.data['extra'], e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("EXTRA langgraph") and "pip install 'agentcontext[langgraph]'" in out.stdout


def test_the_example_runs(tmp_path):
    from .conftest import EXAMPLES

    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTCONTEXT_")}
    proc = subprocess.run([sys.executable, str(EXAMPLES / "langgraph_memory.py"), str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "tuesday recalls: I am allergic to peanuts" in proc.stdout
    assert "erased: erased | monday's state: None | memories left: []" in proc.stdout


def test_the_docs_page_example_runs_as_it_stands(tmp_path):
    from .conftest import EXAMPLES

    page = EXAMPLES / "packs" / "agentcontext-docs" / "guide" / "docs" / "integrations" / "langgraph.md"
    block = re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)[0]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTCONTEXT_")}
    proc = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "I am allergic to peanuts" in proc.stdout


@pytest.mark.postgres
def test_a_graph_on_postgresql(pg_server):
    url = pg_server.url()
    with AgentContextSaver.from_conn_string(url) as saver, AgentContextStore.from_conn_string(url, index=INDEX) as st:
        graph = build(saver, st)
        graph.invoke({"text": "I always drink green tea with jasmine in the morning"}, conf("p1"))
        assert graph.invoke(Command(resume="yes"), conf("p1"))["answer"] == "yes"
        graph.invoke({"text": "which hot drink do I like?"}, conf("p2"))
        assert "I always drink green tea with jasmine in the morning" in \
            graph.invoke(Command(resume="no"), conf("p2"))["found"]
        saver.delete_thread("p1")
        st.delete(("memories", "u1"), "p1")
        assert saver.get_tuple(conf("p1")) is None and st.get(("memories", "u1"), "p1") is None
        assert graph.get_state(conf("p2")).values["answer"] == "no"
        erase_workspace_entity(saver.ws, "u1", reason="user asked")
        assert saver.get_tuple(conf("p2")) is None and st.search(("memories",)) == []


def test_agent_memory_recalls_the_items_but_not_the_thread_state(tmp_path):
    from agentcontext.memory.service import workspace_memory

    with AgentContextSaver.from_conn_string(f"{tmp_path}/lg.db") as saver:
        st = AgentContextStore(saver.ws, index=INDEX)
        graph = build(saver, st)
        graph.invoke({"text": "I always drink green tea with jasmine"}, conf("t1"))
        graph.invoke(Command(resume="yes"), conf("t1"))
        memory = workspace_memory(saver.ws)
        assert memory.count() == 1  # the item; checkpoints and writes are thread state, not memories
        found = memory.retrieve("green tea", max_results=5)
        assert [m["content"] for m in found] == ["I always drink green tea with jasmine"]
        assert saver.ws.store.count_nodes("memory:default", kind="memory_state") >= 4


@pytest.mark.postgres
def test_migrate_carries_a_threads_state_and_the_items_to_postgresql(tmp_path, pg_server):
    from agentcontext.migrate import migrate

    src, dst = f"sqlite:///{tmp_path}/lg.db", pg_server.url()
    with AgentContextSaver.from_conn_string(src) as saver, AgentContextStore.from_conn_string(src) as st:
        build(saver, st).invoke({"text": "I always drink green tea"}, conf("t1"))  # paused at the interrupt
    migrate(src, dst)
    with AgentContextSaver.from_conn_string(dst) as saver, AgentContextStore.from_conn_string(dst) as st:
        graph = build(saver, st)
        assert graph.get_state(conf("t1")).next == ("approve",)
        assert graph.invoke(Command(resume="yes"), conf("t1"))["answer"] == "yes"
        assert st.get(("memories", "u1"), "t1").value == {"text": "I always drink green tea"}


def test_ttl_expires_refreshes_and_sweeps(tmp_path):
    import time

    ttl = 0.02  # minutes: 1.2 s
    with AgentContextStore.from_conn_string(f"{tmp_path}/lg.db", ttl={"refresh_on_read": True}) as st:
        st.put(("s",), "short", {"v": 1}, ttl=ttl)
        st.put(("s",), "read", {"v": 2}, ttl=ttl)
        st.put(("s",), "kept", {"v": 3})
        for _ in range(3):  # reading "read" restarts its clock; "short" is never read
            time.sleep(0.5)
            assert st.get(("s",), "read") is not None
        assert st.get(("s",), "short", refresh_ttl=False) is None  # expired: never returned
        assert [i.key for i in st.search(("s",))] == ["kept", "read"]  # the last written first
        time.sleep(1.3)
        assert st.list_namespaces() == [("s",)]
        assert st.sweep_ttl() == 2
        assert [i.key for i in st.search(("s",))] == ["kept"]
    with AgentContextStore.from_conn_string(f"{tmp_path}/lg.db", ttl={"default_ttl": ttl,
                                                                        "sweep_interval_minutes": 0.01}) as st:
        st.put(("d",), "default", {"v": 4})  # the store's default ttl
        future = st.start_ttl_sweeper()
        deadline = time.time() + 10
        while st.room.find() and len(st.room.find()) > 1 and time.time() < deadline:
            time.sleep(0.2)
        assert st.stop_ttl_sweeper(timeout=5) and not future.cancelled()
        assert [n.props["langgraph"]["key"] for n in st.room.find()] == ["kept"]  # purged by the sweeper
    with AgentContextStore.from_conn_string(":memory:") as st:
        assert st.start_ttl_sweeper().done()  # no ttl config: nothing to sweep


def test_an_async_graph_with_the_async_adapters(tmp_path):
    import asyncio

    from agentcontext.integrations.langgraph import AsyncAgentContextSaver, AsyncAgentContextStore

    async def main():
        url = f"sqlite:///{tmp_path}/lg.db"
        async with AsyncAgentContextSaver.from_conn_string(url) as saver, \
                AsyncAgentContextStore.from_conn_string(url, index=INDEX) as st:
            graph = build(saver, st)
            await graph.ainvoke({"text": "I always drink green tea with jasmine"}, conf("a1"))
            assert (await graph.ainvoke(Command(resume="yes"), conf("a1")))["answer"] == "yes"
            await graph.ainvoke({"text": "which hot drink do I like?"}, conf("a2"))
            found = (await graph.ainvoke(Command(resume="no"), conf("a2")))["found"]
            assert "I always drink green tea with jasmine" in found
            assert [c async for c in saver.alist(conf("a1"), limit=2)][0].checkpoint["channel_values"]["answer"] \
                == "yes"
            with pytest.raises(asyncio.InvalidStateError):
                st.get(("memories", "u1"), "a1")  # sync calls inside the loop are refused, as LangGraph's stores do
            await saver.adelete_thread("a1")
            assert await saver.aget_tuple(conf("a1")) is None

    asyncio.run(main())


def test_two_connections_writing_one_key_make_one_item(tmp_path):
    import threading

    url = f"sqlite:///{tmp_path}/lg.db"
    with AgentContextStore.from_conn_string(url) as a, AgentContextStore.from_conn_string(url) as b:
        def write(store, who):
            for i in range(15):
                store.put(("race",), "key", {"who": who, "i": i})

        threads = [threading.Thread(target=write, args=(s, w)) for s, w in ((a, "a"), (b, "b"))]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert len(a.room.find()) == 1 and a.get(("race",), "key").value["i"] == 14
        a.delete(("race",), "key")
        assert b.get(("race",), "key") is None and b.room.find() == []


def test_scores_with_our_embedder_are_calibrated_relevance():
    with AgentContextStore.from_conn_string(":memory:", index=INDEX) as st:
        st.put(("u",), "tea", {"text": "I like green tea in the morning"})
        st.put(("u",), "rain", {"text": "The weather is rainy today"})
        st.put(("u",), "money", {"text": "Our quarterly revenue grew by ten percent"}, index=False)
        hits = st.search(("u",), query="which drink do I like?")
        assert [h.key for h in hits] == ["tea", "rain", "money"]  # money is not embedded: after, unscored
        assert hits[0].score > 0.5 > 0.2 > hits[1].score >= 0.0 and hits[2].score is None
        assert st.search(("u",), query="zebra migration")[0].score < 0.2  # nothing relevant scores low
