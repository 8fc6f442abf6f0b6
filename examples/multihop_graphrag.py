"""Seed 003's Multi-Hop GraphRAG example, with the imports changed, against any OpenAI-compatible server.

    GROQ_API_KEY=... python examples/multihop_graphrag.py                       # Groq, as the seed does
    LLM_BASE_URL=http://127.0.0.1:11434/v1 LLM_MODEL=llama3.2 python examples/multihop_graphrag.py   # Ollama
    LLM_BASE_URL=http://127.0.0.1:8000/v1 LLM_MODEL=... python examples/multihop_graphrag.py         # vLLM...

It loads a small company knowledge graph (examples/data/company_kg.json), stores a few memories that name
its entities, records a decision, and asks "What technologies have we chosen and why?": the answer cites
the memories and the decision it was given, and the graph expansion that brought each one in is printed.
"""
from __future__ import annotations

import os
from pathlib import Path

from agentcontext import AgentContext, ContextGraph, VectorStore
from agentcontext.llms import Groq, OpenAICompatible

KG = Path(__file__).resolve().parent / "data" / "company_kg.json"

context = AgentContext(
    vector_store=VectorStore(backend="inmemory", dimension=384),
    knowledge_graph=ContextGraph(advanced_analytics=True),
    hybrid_alpha=0.4,        # 0.0 = pure vector  ->  1.0 = pure graph
    max_expansion_hops=3,
    decision_tracking=True,
)
context.load_graph(str(KG))  # the seed's context.load_graph("company_kg.json")

context.store("We chose PostgreSQL for billing because its ACID transactions keep invoices consistent.",
              metadata={"entities": ["postgresql"]})
context.store("FastAPI was picked for the billing API: async, typed, and the team already knew it.",
              metadata={"entities": ["fastapi"]})
context.store("The team lunch moved to Thursdays.")
context.record_decision(
    category="technology", scenario="Choose the event bus for order events",
    reasoning="Consumers must replay order events in order; Kafka keeps ordered, replayable streams",
    outcome="kafka", confidence=0.85, entities=["kafka"], decision_maker="architecture_board",
)

# --- seed 003, "Multi-Hop GraphRAG" (only the import changed) ------------------------------------------
if os.getenv("LLM_BASE_URL"):
    llm = OpenAICompatible(base_url=os.environ["LLM_BASE_URL"], model=os.getenv("LLM_MODEL", "llama3.2"),
                           api_key=os.getenv("LLM_API_KEY"))
else:
    llm = Groq(model="llama-3.3-70b-versatile", api_key=os.getenv("GROQ_API_KEY"))
result = context.query_with_reasoning(
    query="What technologies have we chosen and why?",
    llm_provider=llm,
    max_hops=2,
    max_results=10,
)

print(result["response"])
print("Confidence: {:.2f}".format(result["confidence"]))
print("Sources used: {}".format(result["num_sources"]))
# --- beyond the seed: what was cited, and how each source came in ------------------------------------
for c in result["citations"]:
    print("  cited [{}] {} {}".format(c["label"], c["kind"], c["id"]))
for p in result["reasoning_path"]:
    hops = " ".join("-[{}]-> {}".format(s["edge"], s["to_title"]) if s["direction"] == "out"
                    else "<-[{}]- {}".format(s["edge"], s["to_title"]) for s in p["steps"])
    print("  [{}] {} {}".format(p["label"], p["origin"], hops))
print("Tokens: context {}, model {}".format(result["context_tokens"], result["usage"]["total_tokens"]))
