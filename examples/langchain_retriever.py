"""agentcontext inside LangChain: a retriever over memories and knowledge packs, and the knowledge tools as LangChain
tools. `pip install 'agentcontext[langchain]'`.

Run: python examples/langchain_retriever.py [FOLDER]   (the workspace is FOLDER/.agentcontext, default ./)
"""
import json
import sys
from pathlib import Path

from agentcontext import Workspace
from agentcontext.integrations.langchain import AgentContextRetriever, agentcontext_tools
from agentcontext.knowledge.packs import install_folder
from agentcontext.memory.service import workspace_memory

PACKS = Path(__file__).resolve().parent / "packs"


def main(folder: Path) -> None:
    ws = Workspace.open(home=folder / ".agentcontext", create=True)
    install_folder(ws, PACKS / "semdag")  # a small pack: lib:semdag
    memory = workspace_memory(ws)  # memory:default, what `agentcontext memory` and MCP use
    memory.clear_memory(conversation_id="onboarding")  # start afresh each run
    memory.store("Ana asked how invitations to her team account work.", conversation_id="onboarding")

    retriever = AgentContextRetriever(workspace=ws, k=3)  # memories and every readable pack, best first
    for doc in retriever.invoke("how do invitations work?"):
        print(f"{doc.metadata['score']:.2f}  {doc.id}  {doc.page_content[:60]!r}")

    tools = {tool.name: tool for tool in agentcontext_tools(ws)}
    print(sorted(tools))
    bundle = json.loads(tools["flash"].invoke({"pack": "lib:semdag", "selector": "invitations"}))
    print("flash order:", bundle["order"])
    ws.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("."))
