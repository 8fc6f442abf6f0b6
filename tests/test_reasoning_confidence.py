"""query_with_reasoning's confidence on a labelled set of 20 answers (issue 26 s4): a grounded answer that cites the
sources holding what it says scores high (it was 0.03 for a correct answer citing exactly the three relevant
sources); an uncited one, one citing a source that does not say it, or one inventing citations scores low."""
from __future__ import annotations

import pytest

from agentcontext.reasoning.answer import ground

from .test_reasoning import QUESTION, reasoning, world  # noqa: F401  (the fixture)

HIGH, LOW = 0.7, 0.35

# {why}: "We chose PostgreSQL for billing because its ACID transactions keep invoices consistent."
# {decision}: technology, "Choose the billing database", "ACID transactions and mature tooling", outcome postgresql
# {doc}: "Billing stores invoices in PostgreSQL; backups run nightly."  {dana}: "Dana runs the database cluster..."
GROUNDED = [
    "We chose PostgreSQL for billing because its ACID transactions keep invoices consistent [{why}].",
    "PostgreSQL was chosen for billing: its transactions keep the invoices consistent [{why}].",
    "Billing runs on PostgreSQL because ACID transactions keep invoices consistent [{why}]. Backups of billing run "
    "nightly [{doc}].",
    "The billing database decision went to PostgreSQL for ACID transactions and mature tooling [{decision}].",
    "PostgreSQL was chosen for billing. Its ACID transactions keep invoices consistent [{why}].",
    "Invoices stay consistent thanks to the ACID transactions of PostgreSQL [{why}][{decision}].",
    "Billing stores invoices in PostgreSQL [{doc}], chosen for its ACID transactions [{why}].",
    "We chose PostgreSQL for billing for its ACID transactions [{why}]. The decision also weighed mature tooling "
    "[{decision}]. Invoices are backed up nightly [{doc}].",  # the audit's case: exactly the three relevant sources
    "Dana runs the database cluster and is on call at weekends [{dana}].",
    "PostgreSQL keeps billing invoices consistent with ACID transactions [{why}, {decision}].",
]
UNGROUNDED = [
    "We chose PostgreSQL for billing because ACID transactions keep invoices consistent.",  # no citation
    "The sources do not say.",
    "We chose PostgreSQL for billing because its ACID transactions keep invoices consistent [{dana}].",  # wrong one
    "We chose PostgreSQL for billing for its ACID transactions [mem_fake_123].",  # invented
    "We chose PostgreSQL for billing for its ACID transactions [{missing}].",  # a number past the sources
    "Billing moved to MongoDB in 2019 to cut licence costs [{why}].",  # says what the source does not
    "We chose PostgreSQL [{why}]. Payroll runs on Oracle in Singapore. HR uses spreadsheets kept by Lena.",
    "Backups of the cluster run nightly at midnight with three replicas [{why}].",  # the doc says it, not {why}
    "See the sources for the reasons, costs and risks [{why}][{decision}][{doc}].",
    "Billing was migrated to PostgreSQL 9.6 in March 2014 by a team of twelve contractors [{decision}].",
]


@pytest.fixture(scope="module")
def bundle(world):  # noqa: F811
    ctx, ids, _ = world
    b = reasoning(ctx).context_for(QUESTION, max_results=10, max_hops=2)
    labels = {"why": b.label_of(ids["why"]), "decision": b.label_of(ids["decision"]), "dana": b.label_of(ids["dana"]),
              "doc": next(i for i, s in enumerate(b.sources, 1) if s.kind == "doc"), "missing": b.num_sources + 3}
    assert all(labels.values())
    return b, labels


@pytest.mark.parametrize("answer", GROUNDED)
def test_a_grounded_fully_cited_answer_scores_high(bundle, answer):
    b, labels = bundle
    g = ground(answer.format(**labels), b)
    assert g.confidence >= HIGH, (answer, g.parts())


@pytest.mark.parametrize("answer", UNGROUNDED)
def test_an_uncited_or_wrongly_cited_answer_scores_low(bundle, answer):
    b, labels = bundle
    g = ground(answer.format(**labels), b)
    assert g.confidence <= LOW, (answer, g.parts())


def test_the_labelled_set_separates_cleanly(bundle):
    b, labels = bundle
    high = [ground(a.format(**labels), b).confidence for a in GROUNDED]
    low = [ground(a.format(**labels), b).confidence for a in UNGROUNDED]
    assert min(high) > max(low) and len(high) + len(low) == 20
