"""Precedent retrieval quality on a small labelled set of paraphrased scenarios (hit@1 >= 0.8)."""
from __future__ import annotations

from agentcontext import AgentContext
from agentcontext.graph.context_graph import ContextGraph

DECISIONS = {
    "loan": ("loan_approval", "First-time homebuyer: 30yr fixed, 20% down",
             "Credit score above threshold, DTI within limits"),
    "htn": ("treatment_plan", "Hypertension with comorbid diabetes",
            "ACE inhibitors are renoprotective in diabetic patients"),
    "scale": ("ops", "Scale up", "Load > 80%"),
    "llm": ("model_selection", "Choose LLM for production reasoning pipeline",
            "GPT-4 benchmark advantage justifies 3x cost increase"),
    "fastapi": ("technology_choice", "Web API framework selection",
                "FastAPI's async support and auto-docs match our requirements"),
    "refund": ("support", "Customer requests refund after 45 days", "Outside the 30-day window but a loyal customer"),
    "fraud": ("payments", "Card transaction flagged from a new country", "Velocity and geo mismatch, block and notify"),
    "hire": ("hiring", "Senior backend engineer offer", "Strong system design interview, salary within band"),
    "pg": ("technology_choice", "Pick a database for the orders service", "Need transactions and joins: PostgreSQL"),
    "gdpr": ("privacy", "User asks to delete their account data", "GDPR erasure request must be honoured in 30 days"),
    "outage": ("incident", "Roll back deploy after error spike", "5xx rate tripled right after release 2.4"),
    "pricing": ("pricing", "Raise the price of the pro plan", "Costs rose and competitors charge more"),
    "vendor": ("procurement", "Renew cloud monitoring contract", "Tool met SLA and the team relies on it"),
    "asthma": ("treatment_plan", "Child with persistent asthma symptoms", "Start low-dose inhaled corticosteroid"),
    "cache": ("infra", "Add Redis cache in front of product catalogue", "Read latency p95 over 400ms"),
    "ab": ("growth", "Ship the new checkout flow", "A/B test showed 4% conversion lift, significant"),
    "security": ("security", "Rotate leaked AWS access keys", "Keys found in a public GitHub repository"),
    "remote": ("hr_policy", "Allow fully remote work for engineers", "Retention improved in the pilot"),
    "backup": ("ops", "Move nightly backups to another region", "Single-region backups risk total loss"),
    "insurance": ("claims", "Water damage claim for basement flooding", "Policy covers sudden pipe bursts, approve"),
}

QUERIES = [  # paraphrases sharing few words with the target
    ("first time home buyer mortgage application", "loan"),
    ("high blood pressure patient who also has diabetes", "htn"),
    ("traffic is spiking, should we add more replicas", "scale"),
    ("which large language model for our production system", "llm"),
    ("choosing a python framework for a REST service", "fastapi"),
    ("shopper wants money back two months after purchase", "refund"),
    ("suspicious credit card purchase abroad", "fraud"),
    ("job offer for an experienced server-side developer", "hire"),
    ("relational datastore for order processing", "pg"),
    ("right to be forgotten request", "gdpr"),
    ("errors went up after the release, revert it?", "outage"),
    ("increase subscription cost for premium tier", "pricing"),
    ("extend the observability tool subscription", "vendor"),
    ("kid keeps wheezing and coughing at night", "asthma"),
    ("slow catalog reads, put an in-memory cache in front", "cache"),
    ("experiment result says new payment page converts better", "ab"),
    ("cloud credentials exposed publicly", "security"),
    ("let developers work from home permanently", "remote"),
    ("store database snapshots in a second geographic location", "backup"),
    ("burst pipe flooded the cellar, pay the claim?", "insurance"),
]


def test_paraphrased_precedents_hit_at_1():
    ctx = AgentContext(knowledge_graph=ContextGraph(), decision_tracking=True)
    ids = dict(zip(DECISIONS, ctx.record_decisions([
        dict(category=c, scenario=s, reasoning=r, outcome=f"outcome_{key}", confidence=0.9)
        for key, (c, s, r) in DECISIONS.items()])))
    hits, misses = 0, []
    for query, want in QUERIES:
        found = ctx.find_precedents(query, limit=3)
        if found and found[0].decision_id == ids[want]:
            hits += 1
        else:
            misses.append((query, want, [d.outcome for d in found]))
    assert hits / len(QUERIES) >= 0.8, misses
    # category filtering keeps the answer inside the category even for an off-topic query
    assert {d.category for d in ctx.find_precedents("flooded basement", category="treatment_plan")} == {
        "treatment_plan"}
