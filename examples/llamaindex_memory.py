"""agentcontext inside LlamaIndex: a memory block that gives a Memory agentcontext's cited context for the latest
messages (and keeps what the Memory flushes as memories), and a retriever over memories and packs.
`pip install 'agentcontext[llamaindex]'`.

Run: python examples/llamaindex_memory.py [FOLDER]   (the workspace is FOLDER/.agentcontext, default ./)
"""
import sys
from pathlib import Path

from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory

from agentcontext import Workspace
from agentcontext.integrations.llamaindex import AgentContextMemoryBlock, AgentContextRetriever
from agentcontext.knowledge.packs import create_pack, put_doc
from agentcontext.knowledge.tools import list_knowledge_packs


def handbook(ws: Workspace) -> None:
    """A small knowledge pack, lib:handbook: three docs, each building on the one before (made once)."""
    if not any(p["pack"] == "lib:handbook" for p in list_knowledge_packs(ws)):
        create_pack(ws, "handbook")
    for selector, needs, text in [
        ("accounts", [], "An account holds a team's projects; its owner manages billing."),
        ("membership", ["accounts"], "A membership joins a person to an account as owner, admin or member."),
        ("invitations", ["membership"], "Owners and admins invite people by email, into a role no higher than "
                                        "their own; an invitation expires after seven days."),
    ]:
        put_doc(ws, "lib:handbook", selector, title=selector.title(), summary=text, content=text,
                related=[{"type": "depends_on", "target": n} for n in needs])


def main(folder: Path) -> None:
    ws = Workspace.open(home=folder / ".agentcontext", create=True)
    handbook(ws)

    block = AgentContextMemoryBlock(workspace=ws, user_id="ana")
    memory = Memory.from_defaults(session_id="chat-7", token_limit=200, memory_blocks=[block])
    memory.put(ChatMessage(role="user", content="How do invitations to an account work?"))
    system = memory.get()[0]  # the block's cited context, in the system message
    print(system.content[:400])

    retriever = AgentContextRetriever(ws, similarity_top_k=2)
    for hit in retriever.retrieve("who may join an account?"):
        print(f"{hit.score:.2f}  {hit.node.node_id}")
    ws.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("."))
