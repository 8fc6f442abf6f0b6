"""agentcontext inside LangChain: a retriever over memories and knowledge packs, and the knowledge tools as LangChain
tools. `pip install 'agentcontext[langchain]'`.

Run: python examples/langchain_retriever.py [FOLDER]   (the workspace is FOLDER/.agentcontext, default ./)
"""
import json
import sys
from pathlib import Path

from agentcontext import Workspace
from agentcontext.integrations.langchain import AgentContextRetriever, agentcontext_tools
from agentcontext.knowledge.packs import create_pack, put_doc
from agentcontext.knowledge.tools import list_knowledge_packs
from agentcontext.memory.service import workspace_memory


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
    memory = workspace_memory(ws)  # memory:default, what `agentcontext memory` and MCP use
    memory.clear_memory(conversation_id="onboarding")  # start afresh each run
    memory.store("Ana asked how invitations to her team account work.", conversation_id="onboarding")

    retriever = AgentContextRetriever(workspace=ws, k=3)  # memories and every readable pack, best first
    for doc in retriever.invoke("how do invitations work?"):
        print(f"{doc.metadata['score']:.2f}  {doc.id}  {doc.page_content[:60]!r}")

    tools = {tool.name: tool for tool in agentcontext_tools(ws)}
    print(sorted(tools))
    bundle = json.loads(tools["flash"].invoke({"pack": "lib:handbook", "selector": "invitations"}))
    print("flash order:", bundle["order"])
    ws.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("."))
