"""LangGraph with agentcontext: a graph whose thread state (checkpointer) and long-term memory (store) live in one
agentcontext store, so grants, audit and erasure cover both. Needs `pip install 'agentcontext[langgraph]'`.

    python examples/langgraph_memory.py [folder]     # the store file goes there (default: a temporary folder)
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from langgraph.types import Command, interrupt

from agentcontext.erasure.workspace import erase_workspace_entity
from agentcontext.integrations.langgraph import AgentContextSaver, AgentContextStore


class State(TypedDict, total=False):
    message: str
    approved: bool
    recalled: list[str]


def remember(state: State, config: RunnableConfig, *, store: BaseStore) -> State:
    """Long-term memory: one item per thread under the user's namespace."""
    user = config["configurable"]["user_id"]
    store.put(("memories", user), config["configurable"]["thread_id"], {"text": state["message"]})
    return {}


def review(state: State) -> State:
    """Pause for a human; `Command(resume=...)` continues from here, in this process or another."""
    return {"approved": interrupt(f"Keep this memory? {state['message']!r}") == "yes"}


def recall(state: State, config: RunnableConfig, *, store: BaseStore) -> State:
    """Search the user's memories from the other threads, by meaning (agentcontext's embedder) and words."""
    user, thread = config["configurable"]["user_id"], config["configurable"]["thread_id"]
    hits = store.search(("memories", user), query=state["message"], limit=3)
    return {"recalled": [f"{h.value['text']} (score {h.score:.2f})" for h in hits if h.key != thread]}


def build(saver: AgentContextSaver, store: AgentContextStore):
    graph = StateGraph(State)
    for name, node in (("remember", remember), ("review", review), ("recall", recall)):
        graph.add_node(name, node)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "review")
    graph.add_edge("review", "recall")
    graph.add_edge("recall", END)
    return graph.compile(checkpointer=saver, store=store)


def main(folder: Path) -> None:
    url = f"sqlite:///{folder / 'agent.db'}"  # or postgresql://user@host/db
    index = {"fields": ["text"]}  # semantic search served by agentcontext's own embedder
    monday = {"configurable": {"thread_id": "monday", "user_id": "ada"}}
    tuesday = {"configurable": {"thread_id": "tuesday", "user_id": "ada"}}

    with AgentContextSaver.from_conn_string(url) as saver, AgentContextStore.from_conn_string(url, index=index) as mem:
        graph = build(saver, mem)
        paused = graph.invoke({"message": "I am allergic to peanuts"}, monday)
        print("paused:", paused["__interrupt__"][0].value)

    # later, in another process: the same URL, and the thread resumes where it paused
    with AgentContextSaver.from_conn_string(url) as saver, AgentContextStore.from_conn_string(url, index=index) as mem:
        graph = build(saver, mem)
        print("monday:", graph.invoke(Command(resume="yes"), monday)["approved"])
        graph.invoke({"message": "What should I avoid eating?"}, tuesday)
        print("tuesday recalls:", graph.invoke(Command(resume="no"), tuesday)["recalled"][0])

        # one erasure of the user removes their memories and their threads' state
        receipt = erase_workspace_entity(saver.ws, "ada", reason="account closed")
        print("erased:", receipt.stores["memory"]["status"], "| monday's state:", saver.get_tuple(monday),
              "| memories left:", mem.search(("memories", "ada")))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp))
