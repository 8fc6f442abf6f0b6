"""The LlamaIndex adapter (integrations.llamaindex): the memory block inside a real ``Memory`` (cited context for the
latest messages, flushed messages stored as memories), the retriever over memories and packs, the principal's grants,
erasure to the byte, a missing llama-index-core."""
from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.llms import ChatMessage  # noqa: E402
from llama_index.core.memory import Memory  # noqa: E402

from agentcontext.erasure import erase_workspace_entity  # noqa: E402
from agentcontext.errors import AccessDeniedError, DependencyMissingError  # noqa: E402
from agentcontext.integrations.llamaindex import AgentContextMemoryBlock, AgentContextRetriever  # noqa: E402
from agentcontext.memory.service import workspace_memory  # noqa: E402

from .bytescan import folder_files, hits, new_secret  # noqa: E402
from .test_access import build_workspace  # noqa: E402


def chat(block, session="s1") -> Memory:
    """A Memory that flushes all but the newest few messages to the block."""
    return Memory.from_defaults(session_id=session, token_limit=60, chat_history_token_ratio=0.5,
                                token_flush_size=20, memory_blocks=[block])


def test_the_block_gives_cited_context_and_keeps_what_the_memory_flushes(ws):
    build_workspace(ws)
    workspace_memory(ws).store("Ana's favourite editor is Helix.", conversation_id="old")
    block = AgentContextMemoryBlock(workspace=ws, user_id="ana")
    memory = chat(block)
    said = ["Hi, I am Ana, the new engineer on the payments team.", "I start onboarding today at the Berlin office.",
            "I still need a badge for the building.", "Which editor should I install?", "Something I would like?"]
    for text in said:
        memory.put(ChatMessage(role="user", content=text))
    messages = memory.get()
    system = messages[0]
    assert system.role.value == "system" and "<agentcontext>" in system.content
    assert "[1]" in system.content and "Helix" in system.content  # the earlier conversation, cited
    assert "mem_" in system.content  # each source names its id
    stored = workspace_memory(ws).get_conversation_history("s1")
    texts = [m["content"] for m in stored]
    assert texts and texts == said[:len(texts)]  # the oldest, flushed in order
    assert {m["user_id"] for m in stored} == {"ana"} and stored[0]["metadata"]["speaker"] == "user"
    assert len(stored) + len(messages) - 1 == len(said)  # flushed + still in the short-term history
    docs = block.context("how do I start onboarding?")
    assert "lib:open#guide" in docs or "lib:open#basics" in docs  # packs are read too
    assert asyncio.run(block.aget([])) == ""


def test_the_retriever_ranks_memories_and_docs_together(ws):
    build_workspace(ws)
    workspace_memory(ws).store("The onboarding buddy for Ana is Ravi.", conversation_id="hr")
    nodes = AgentContextRetriever(ws, similarity_top_k=3).retrieve("who is the onboarding buddy?")
    assert nodes[0].node.text == "The onboarding buddy for Ana is Ravi."
    assert nodes[0].node.metadata["source"] == "memory"
    assert [n.score for n in nodes] == sorted((n.score for n in nodes), reverse=True)
    docs = AgentContextRetriever(ws, similarity_top_k=10, memory_namespace=None).retrieve("onboarding guide")
    guide = next(n for n in docs if n.node.node_id == "lib:open#guide")
    assert guide.node.text == "The onboarding guide builds on the basics."
    assert "signals" not in guide.node.get_content(metadata_mode="llm")


def denied(ws, who):
    return [r for r in ws.store.audit(principal=who) if r["outcome"] == "denied"]


def test_a_stranger_is_refused_and_audited_as_by_the_cli_and_mcp(ws):
    build_workspace(ws)  # multi-user: grants exist
    workspace_memory(ws).store("Payroll runs on the 25th; secret code 7781.", conversation_id="hr")
    with pytest.raises(AccessDeniedError):
        AgentContextRetriever(ws, principal="mallory").retrieve("payroll")
    assert len(denied(ws, "mallory")) == 1
    block = AgentContextMemoryBlock(workspace=ws, principal="mallory")
    with pytest.raises(AccessDeniedError):
        asyncio.run(block.aput([ChatMessage(role="user", content="remember me")]))
    assert len(denied(ws, "mallory")) == 2
    assert "7781" not in block.context("payroll secret code")  # as get_context: the memory store is left out
    reader = AgentContextRetriever(ws, principal="reader", memory_namespace=None, similarity_top_k=10)
    assert {n.node.metadata["pack"] for n in reader.retrieve("onboarding salary")} == {"lib:open"}


def test_after_an_erasure_of_the_user_no_file_holds_what_the_block_stored(tmp_path):
    from agentcontext.workspace import Workspace

    home = tmp_path / ".agentcontext"
    ws = Workspace.open(home=home, create=True)
    secret = new_secret()
    block = AgentContextMemoryBlock(workspace=ws, user_id="customer-4471")
    memory = chat(block, "support")
    for text in (f"My card number is {secret}.", f"Please block {secret}.", "Thanks.", "Anything else?",
                 "No, that is all."):
        memory.put(ChatMessage(role="user", content=text))
    assert block.context(f"card {secret}")  # the memory index is built and saved beside the store
    ws.index_files.wait()
    assert hits(folder_files(home), secret)
    assert erase_workspace_entity(ws, "customer-4471").complete
    ws.index_files.wait()
    assert hits(folder_files(home), secret) == {}
    ws.close()


def test_without_llama_index_the_import_names_the_extra():
    code = ("import sys; sys.modules['llama_index.core'] = None\n"
            "try:\n    import agentcontext.integrations.llamaindex\n"
            "except Exception as exc:\n    print(type(exc).__name__, exc)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.startswith(DependencyMissingError.__name__), proc.stderr
    assert "pip install 'agentcontext[llamaindex]'" in proc.stdout
