"""``agentcontext eval locomo``: retrieval benchmarks."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional


from .build import Argument, Group, Option
from ..errors import ValidationError
from .common import JSON_OPTION, emit, must_exist, out, progress_bar

eval_app = Group(help="Retrieval benchmarks.", no_args_is_help=True)


@eval_app.command("locomo")
def locomo_cmd(file: Path = Argument(..., help="A LoCoMo JSON file (list of samples)."),
               k: str = Option("1,5,10", "--k", help="Comma-separated cut-offs."),
               answers: bool = Option(True, "--answers/--no-answers",
                                            help="Memory search's answer stage: a reply to a question ranks at least "
                                                 "a share of the turn the question followed (on by default)."),
               model: Optional[str] = Option(None, "--model", help="Embedding model: minilm (default), "
                                                   "mpnet, e5-small or minilm+mpnet (embed/models.py)."),
               rerank: bool = Option(False, "--rerank", help="Memory search's reranker on (engine/rerank.py)."),
               ranker: str = Option("linear", "--ranker", help="Memory search's order: linear (the fusion, "
                                    "default), learned (the fusion's first 80 in the learned trees' order, "
                                    "engine/ltr.py) or facets (the candidates of the question's clauses merged in "
                                    "after its first 5, memory/facet_search.py)."),
               places: bool = Option(False, "--places", help="Each turn's embedded and indexed text gets the "
                                     "glosses of the places it names (a city's state and country; "
                                     "memory/places.py, the places extra)."),
               bridge: bool = Option(False, "--bridge", help="Memory search's bridge stage: the rare names of "
                                     "the first hits pull up the other memories naming them (memory/bridge.py; "
                                     "SQLite workspaces: a PostgreSQL one refuses it)."),
               rewrite: bool = Option(False, "--rewrite", help="Also score each question through query "
                                            "rewriting with the provider of AGENTCONTEXT_LLM_BASE_URL / _MODEL / "
                                            "_API_KEY (memory/rewrite.py), printed as a separate row."),
               json_out: bool = JSON_OPTION) -> None:
    """Retrieval-only LoCoMo: evidence recall at each k (partial and full hits), category 5 left out; each retrieval
    option can be turned off to print the figures without it."""
    from dataclasses import replace

    from ..embed.models import MINILM, spec_of
    from ..engine.fusion import weights_for
    from ..eval_locomo import evaluate
    from ..memory.bridge import BRIDGE

    try:
        ks = [int(x) for x in k.split(",") if x.strip()]
    except ValueError as exc:
        raise ValidationError(f"--k expects comma-separated integers, got {k!r}") from exc
    must_exist(file)
    llm = None
    if rewrite:
        from ..llms.env import ENV_BASE_URL, ENV_MODEL, provider_from_env

        llm = provider_from_env(max_retries=1, deadline=30.0)
        if llm is None:
            raise ValidationError(f"--rewrite needs a provider: set {ENV_BASE_URL} (an OpenAI-compatible server, "
                                  f"e.g. http://127.0.0.1:8000/v1), {ENV_MODEL} and, if the server needs one, "
                                  "AGENTCONTEXT_LLM_API_KEY")
    with progress_bar(not json_out) as report:
        weights = weights_for(spec_of(model).name if model else MINILM)  # the model's own, if fitted for it
        weights = weights if answers else replace(weights, answer=0.0)
        weights = replace(weights, bridge=BRIDGE) if bridge else weights
        result = evaluate(file, ks, progress=report, memory_options={"weights": weights, "ranker": ranker,
                                                                        "places": places},
                          model=model, rerank=rerank,
                          rewrite=llm)
    result["options"] = {"answers": answers, "places": places, "bridge": bridge}
    result["ranker"] = ranker

    def human(d: dict[str, Any]) -> None:
        out.print(f"LoCoMo retrieval: {d['conversations']} conversations, {d['questions']} questions "
                  f"({d['skipped_no_evidence']} without usable evidence skipped), {d['seconds']} s; options: "
                  + ", ".join(f"{name} {'on' if on else 'off'}" for name, on in d["options"].items())
                  + f"; model {d['model']}{', reranked' if d['rerank'] else ''}; ranker {d['ranker']}")
        for kk in d["k"]:
            out.print(f"  recall@{kk}: {d['recall'][str(kk)]:.3f}   full@{kk}: {d['full_recall'][str(kk)]:.3f}")
        for cat, row in d["by_category"].items():
            parts = "  ".join(f"@{kk} {row[f'recall@{kk}']:.3f}" for kk in d["k"])
            out.print(f"  category {cat} ({row['questions']} q): {parts}")
        rw = d.get("rewrite")
        if rw:
            out.print(f"with rewrite (provider model {rw['model']}; fallbacks {rw['fallbacks'] or 'none'}; provider "
                      f"round trip p50 {rw['provider_ms_p50']} ms, max {rw['provider_ms_max']} ms; whole question p50 "
                      f"{rw['ms_per_question_p50']} ms)")
            for kk in d["k"]:
                out.print(f"  recall@{kk}: {rw['recall'][str(kk)]:.3f}   full@{kk}: {rw['full_recall'][str(kk)]:.3f}")
            for cat, row in rw["by_category"].items():
                parts = "  ".join(f"@{kk} {row[f'recall@{kk}']:.3f}" for kk in d["k"])
                out.print(f"  category {cat} ({row['questions']} q): {parts}")

    emit(result, json_out, human)
