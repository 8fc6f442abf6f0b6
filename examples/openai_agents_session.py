"""agentcontext inside the OpenAI Agents SDK: a conversation kept as memories (AgentContextSession) and an agent that
searches, flashes and recalls through agentcontext's tools. Runs offline: a scripted model stands in for the LLM
(put `model="gpt-5-mini"` or any model you use in its place). `pip install 'agentcontext[openai-agents]'`.

Run: python examples/openai_agents_session.py [FOLDER]   (the workspace is FOLDER/.agentcontext, default ./)
"""
import asyncio
import sys
from pathlib import Path

from agents import Agent, Runner, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

from agentcontext import Workspace
from agentcontext.integrations.openai_agents import AgentContextSession, agentcontext_tools
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


async def main(folder: Path) -> None:
    set_tracing_disabled(True)  # no OpenAI key here: no trace upload
    ws = Workspace.open(home=folder / ".agentcontext", create=True)
    handbook(ws)

    # The conversation's items are memories of the conversation "support-42" (in memory:default), about user "ana".
    session = AgentContextSession("support-42", ws, user_id="ana")
    await session.clear_session()  # start afresh each run
    await session.add_items([{"role": "user", "content": "I am Ana and I run the Berlin team account."}])

    model = ScriptedModel()  # what a model would do: call two tools, then answer
    model.extend([
        [function_call("flash", {"pack": "lib:handbook", "selector": "invitations", "budget_tokens": 0}, call_id="1"),
         function_call("recall_memory", {"query": "which account does Ana run?", "max_results": 1}, call_id="2")],
        [assistant_message("Read accounts and membership first; then invite people to the Berlin team.")],
    ])
    agent = Agent(name="helper", instructions="Answer from agentcontext's knowledge.", model=model,
                  tools=agentcontext_tools(ws))
    result = await Runner.run(agent, "How do I invite someone to my account?", session=session)
    print("answer:", result.final_output)
    for call in model.calls[-1].input:
        if call.get("type") == "function_call_output":
            print("tool output:", call["output"][:100])

    items = await session.get_items()
    print("session items:", len(items), "| last:", items[-1]["content"][0]["text"])
    session.close()
    ws.close()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".")))
