"""``agentcontext eval locomo``: retrieval benchmarks."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from ..errors import ValidationError
from .common import JSON_OPTION, emit, must_exist, out, progress_bar

eval_app = typer.Typer(help="Retrieval benchmarks.", no_args_is_help=True)


@eval_app.command("locomo")
def locomo_cmd(file: Path = typer.Argument(..., help="A LoCoMo JSON file (list of samples)."),
               k: str = typer.Option("1,5,10", "--k", help="Comma-separated cut-offs."),
               answers: bool = typer.Option(True, "--answers/--no-answers",
                                            help="Memory search's answer stage: a reply to a question ranks at least "
                                                 "a share of the turn the question followed (on by default)."),
               model: Optional[str] = typer.Option(None, "--model", help="Embedding model: minilm (default), "
                                                   "mpnet or e5-small (embed/models.py)."),
               rerank: bool = typer.Option(False, "--rerank", help="Memory search's reranker on (engine/rerank.py)."),
               json_out: bool = JSON_OPTION) -> None:
    """Retrieval-only LoCoMo: evidence recall at each k (partial and full hits), category 5 left out; each retrieval
    option can be turned off to print the figures without it."""
    from ..engine.fusion import FusionWeights
    from ..eval_locomo import evaluate

    try:
        ks = [int(x) for x in k.split(",") if x.strip()]
    except ValueError as exc:
        raise ValidationError(f"--k expects comma-separated integers, got {k!r}") from exc
    must_exist(file)
    with progress_bar(not json_out) as report:
        weights = FusionWeights() if answers else FusionWeights(answer=0.0)
        result = evaluate(file, ks, progress=report, memory_options={"weights": weights}, model=model, rerank=rerank)
    result["options"] = {"answers": answers}

    def human(d: dict[str, Any]) -> None:
        out.print(f"LoCoMo retrieval: {d['conversations']} conversations, {d['questions']} questions "
                  f"({d['skipped_no_evidence']} without usable evidence skipped), {d['seconds']} s; options: "
                  + ", ".join(f"{name} {'on' if on else 'off'}" for name, on in d["options"].items())
                  + f"; model {d['model']}{', reranked' if d['rerank'] else ''}")
        for kk in d["k"]:
            out.print(f"  recall@{kk}: {d['recall'][str(kk)]:.3f}   full@{kk}: {d['full_recall'][str(kk)]:.3f}")
        for cat, row in d["by_category"].items():
            parts = "  ".join(f"@{kk} {row[f'recall@{kk}']:.3f}" for kk in d["k"])
            out.print(f"  category {cat} ({row['questions']} q): {parts}")

    emit(result, json_out, human)
