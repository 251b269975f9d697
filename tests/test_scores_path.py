"""The scores file path: executed file -> `eval`'s writer -> `lever-jax rerank --verifier-scores`.

The eval writer is ``scores_file.eval_scores_document`` on a real ``EvalSet`` (``load_eval_set``
on a bundled test fixture); the verifier scores are a fixed function of the label, so the table
`rerank` prints can be checked against the one method table computed directly.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lever_jax.cli.main import main as cli_main
from lever_jax.data.arrays import problems_to_arrays
from lever_jax.data.jsonl import read_problems, write_json, write_problems
from lever_jax.inputs.examples import TaskSpec
from lever_jax.inputs.feeds import load_eval_set
from lever_jax.inputs.tokenizers import get_vocabulary
from lever_jax.rerank import scores_file, table

FIXTURE = Path(__file__).parent / "fixtures" / "executed" / "gsm8k" / "test.executed.jsonl"


@pytest.fixture(scope="module")
def eval_set():
    spec = TaskSpec(name="fixture_gsm8k_test", dataset="gsm8k", split="test", path=FIXTURE)
    return load_eval_set(spec, get_vocabulary("byte"), 64)


def _verifier(eval_set) -> np.ndarray:
    # A noisy but deterministic verifier: right programs mostly high, some wrong ones higher.
    rng = np.random.default_rng(0)
    labels = eval_set.arrays.correct[eval_set.arrays.mask]  # flat, in the order of eval_set.tokens
    p = np.where(labels, 0.7, 0.4) + rng.uniform(-0.3, 0.3, size=len(labels))
    return np.log(np.clip(p, 1e-3, 1.0)).astype(np.float32)


def test_eval_scores_rerank_in_rerank_cli(tmp_path, eval_set, capsys):
    ver = _verifier(eval_set)
    doc = scores_file.eval_scores_document(eval_set, ver, task="fixture", checkpoint_step=3)
    assert doc["format"] == scores_file.FORMAT and doc["gen_normalize"] == "mean"  # GSM8k: LEVER's
    path = tmp_path / "fixture.scores.json"
    write_json(path, doc, indent=None)
    met = tmp_path / "m.json"
    rc = cli_main(["rerank", "--input", str(FIXTURE), "--verifier-scores", str(path), "--normalize-gen",
                   "--metrics", str(met), "--bootstrap", "20"])
    out = capsys.readouterr().out
    assert rc == 0 and "| LEVER (summing) | `lever` |" in out and "`ml_ep`" in out
    got = {k: v["accuracy"] for k, v in json.loads(met.read_text()).items()}
    # eval's own metrics (compute_metrics) are the same numbers under LEVER's names
    metrics = scores_file.compute_metrics(eval_set, ver)
    assert metrics["summing_agg_rerank_acc"] == pytest.approx(got["lever"])
    assert metrics["rerank_acc"] == pytest.approx(got["lever_no_agg"])
    assert metrics["voting_agg_rerank_acc"] == pytest.approx(got["lever_voting"])
    # an EvalSet without execution status cannot tell ML + EP / error-free voting: left out, not faked
    needs_status = {"ml_ep", "voting_error_free"}
    expected = set(got) if eval_set.arrays.errored_known else set(got) - needs_status
    assert {k[:-4] for k in metrics if k[:-4] in table.METHODS and k.endswith("_acc")} == expected
    for key in expected:
        assert metrics[f"{key}_acc"] == pytest.approx(got[key]), key
    # and the choices written by eval are the ones the table makes on the executed file
    arrays = problems_to_arrays(list(read_problems(FIXTURE, require_execution=True)))
    direct = table.per_problem(arrays, scores_file.read_verifier_scores(path, arrays)[0], normalize_gen=True)
    for row, problem in enumerate(doc["problems"]):
        for key in ("lever", "lever_no_agg", "lever_voting", "majority_vote"):
            assert problem["choices"][key] == int(direct[key][1][row]), key


def test_subset_and_v1_files_are_read(tmp_path, eval_set, capsys):
    ver = _verifier(eval_set)
    records = scores_file.score_records(eval_set, ver)
    legacy = {"problems": [{"problem_id": r["problem_id"],
                            "candidates": [{"index": c["candidate_index"], "verifier_logprob": c["verifier_logprob"]}
                                           for c in r["candidates"]]} for r in records[:2]]}
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(legacy))
    assert cli_main(["rerank", "--input", str(FIXTURE), "--verifier-scores", str(path), "--bootstrap", "20"]) == 0
    captured = capsys.readouterr()
    assert f"scores 2 of {eval_set.num_problems} problems" in captured.err
    assert "2 problems" in captured.out


def test_eval_scores_are_refused_on_a_reordered_pool(tmp_path, eval_set, capsys):
    """`eval`'s scores file pins each score to its program: the same problems with the candidate
    order reversed are an error naming the first mismatching candidate, not a silent rerank."""
    path = tmp_path / "eval.scores.json"
    write_json(path, scores_file.eval_scores_document(eval_set, _verifier(eval_set), task="fixture"), indent=None)
    problems = list(read_problems(FIXTURE, require_execution=True))
    flipped = tmp_path / "flipped.executed.jsonl"
    write_problems(flipped, [p.replace(candidates=tuple(reversed(p.candidates))) for p in problems])
    first = next(i for i, p in enumerate(problems) if p.candidates[0].program != p.candidates[-1].program)
    assert cli_main(["rerank", "--input", str(flipped), "--verifier-scores", str(path), "--bootstrap", "20"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"problems[{first}].candidates[0].program_digest" in err[0], err
    assert f"problem {problems[first].problem_id!r} candidate 0" in err[0] and "flipped.executed.jsonl" in err[0]


def test_eval_reranks_once_and_writes_what_a_fresh_rerank_gives(eval_set, monkeypatch):
    """`lever-jax eval`'s metrics and scores file share one LEVER rerank (its choice, candidate and
    group scores); the document is the one a fresh rerank of the same scores writes."""
    from lever_jax.rerank import scoring

    ver = _verifier(eval_set)
    aggregated: list[bool] = []
    real = scoring.rerank
    monkeypatch.setattr(scoring, "rerank", lambda *a, **k: aggregated.append(k.get("aggregate", True)) or real(*a, **k))
    metrics, doc = scores_file.eval_outputs(eval_set, ver, task="fixture")
    assert aggregated.count(True) == 1, aggregated
    monkeypatch.undo()
    fresh = scores_file.scores_document(eval_set.arrays, eval_set.to_rows(ver), normalize_gen=True,
                                        metadata={"task": "fixture"})
    assert json.dumps(doc, sort_keys=True) == json.dumps(fresh, sort_keys=True)
    assert metrics["summing_agg_rerank_acc"] == pytest.approx(
        np.mean([p["choice_correct"]["lever"] for p in doc["problems"]]))
