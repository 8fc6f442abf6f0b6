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
from agentcontext.knowledge.packs import install_folder

PACKS = Path(__file__).resolve().parent / "packs"


def main(folder: Path) -> None:
    ws = Workspace.open(home=folder / ".agentcontext", create=True)
    install_folder(ws, PACKS / "semdag")  # a small pack: lib:semdag

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
