"""`lever-jax rerank` end to end on a hand-made executed file, and on the bundled GSM8k pool."""
from __future__ import annotations

import json
import math

import pytest

from lever_jax import cli
from lever_jax.data.bundled import bundled_path
from lever_jax.data.jsonl import write_problems
from lever_jax.data.schema import Candidate, Execution, Problem


def _cand(program: str, key: str, correct: bool, count: int = 1) -> Candidate:
    return Candidate(program=program, count=count,
                     execution=Execution(status="ok", result_key=key, result_text=key, correct=correct))


@pytest.fixture()
def executed(tmp_path):
    problems = [
        # Majority (2 votes for "5") is wrong; the verifier prefers "7".
        Problem("p0", "gsm8k", "q0", {}, 7.0, (_cand("a", "5", False), _cand("b", "5", False), _cand("c", "7", True))),
        Problem("p1", "gsm8k", "q1", {}, 1.0, (_cand("d", "1", True, count=3), _cand("e", "2", False))),
    ]
    path = tmp_path / "executed.jsonl.gz"
    write_problems(path, problems)
    return path


def _scores(tmp_path, rows):
    doc = {"problems": [{"problem_id": pid, "candidates": [{"index": i, "verifier_logprob": v} for i, v in enumerate(vs)]}
                        for pid, vs in rows]}
    path = tmp_path / "verifier.json"
    path.write_text(json.dumps(doc))
    return path


def test_rerank_with_verifier_scores(tmp_path, executed, capsys):
    ver = _scores(tmp_path, [("p0", [math.log(0.1), math.log(0.1), math.log(0.9)]), ("p1", [math.log(0.6), math.log(0.5)])])
    out, met = tmp_path / "scores.json", tmp_path / "metrics.json"
    assert cli.main(["rerank", "--input", str(executed), "--verifier-scores", str(ver),
                     "--output", str(out), "--metrics", str(met), "--bootstrap", "200"]) == 0
    metrics = json.loads(met.read_text())
    assert metrics["majority_vote"]["accuracy"] == pytest.approx(0.5)
    assert metrics["lever"]["accuracy"] == pytest.approx(1.0)
    assert metrics["oracle"]["accuracy"] == pytest.approx(1.0)
    scores = json.loads(out.read_text())
    assert scores["format"] == "lever-jax/scores/v2"
    p0 = scores["problems"][0]
    assert [c["candidate_index"] for c in p0["candidates"]] == [0, 1, 2]
    assert p0["choices"]["lever"] == 2 and p0["choices"]["majority_vote"] == 0
    assert [c["group"] for c in p0["candidates"]] == [0, 0, 1]
    assert "LEVER (summing)" in capsys.readouterr().out


def test_rerank_scores_for_a_subset_rerank_that_subset(tmp_path, executed, capsys):
    ver = _scores(tmp_path, [("p0", [math.log(0.1), math.log(0.1), math.log(0.9)])])
    met = tmp_path / "m.json"
    assert cli.main(["rerank", "--input", str(executed), "--verifier-scores", str(ver),
                     "--metrics", str(met), "--bootstrap", "50"]) == 0
    captured = capsys.readouterr()
    assert "scores 1 of 2 problems" in captured.err and "1 problems" in captured.out
    metrics = json.loads(met.read_text())
    assert metrics["lever"]["accuracy"] == 1.0 and metrics["majority_vote"]["accuracy"] == 0.0
    assert metrics["lever"]["num_problems"] == 1


def test_rerank_names_a_partly_scored_problem(tmp_path, executed, capsys):
    ver = _scores(tmp_path, [("p0", [0.0, 0.0])])  # p0 has 3 candidates
    assert cli.main(["rerank", "--input", str(executed), "--verifier-scores", str(ver)]) == 2
    err = capsys.readouterr().err
    assert "verifier.json" in err and "'p0' #2" in err and "Traceback" not in err


def _one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lever-jax: error: ") and "Traceback" not in captured.err, captured.err
    return lines[0]


def test_rerank_user_errors_are_one_line_exit_2(tmp_path, executed, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert cli.main(["rerank", "--input", str(empty)]) == 2
    assert "empty.jsonl" in _one_error_line(capsys)
    assert cli.main(["rerank", "--input", str(tmp_path)]) == 2
    assert "directory" in _one_error_line(capsys)
    assert cli.main(["rerank", "--input", str(tmp_path / "nope.jsonl")]) == 2
    assert "nope.jsonl" in _one_error_line(capsys)
    assert cli.main(["rerank", "--input", str(executed), "--verifier-scores", str(tmp_path / "missing.json")]) == 2
    assert "missing.json" in _one_error_line(capsys)
    assert cli.main(["rerank", "--input", str(executed), "--verifier-scores", str(tmp_path)]) == 2
    assert "directory" in _one_error_line(capsys)
    (tmp_path / "empty.json").write_text("")
    assert cli.main(["rerank", "--input", str(executed), "--verifier-scores", str(tmp_path / "empty.json")]) == 2
    assert "empty.json" in _one_error_line(capsys)
    assert cli.main(["rerank", "--input", str(executed), "--bootstrap", "0"]) == 2
    assert "--bootstrap" in _one_error_line(capsys)


def test_rerank_count_overflow_is_a_user_error(tmp_path, capsys):
    row = {"problem_id": "x", "dataset": "gsm8k", "question": "q", "gold": 1.0,
           "candidates": [{"program": "answer = 1", "count": 10**30,
                           "execution": {"status": "ok", "result_key": "1", "result_text": "1", "correct": True}}]}
    path = tmp_path / "huge.jsonl"
    path.write_text(json.dumps(row) + "\n")
    assert cli.main(["rerank", "--input", str(path)]) == 2
    line = _one_error_line(capsys)
    assert "huge.jsonl" in line and "count" in line


def test_rerank_reports_bad_line(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"problem_id": "x", "dataset": "gsm8k", "question": "q", "candidates": [{"program": 3}]}\n')
    assert cli.main(["rerank", "--input", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl:1" in err and "candidates[0].program" in err


def test_rerank_bundled_pool_matches_data_card(tmp_path):
    met = tmp_path / "m.json"
    pool = bundled_path("gsm8k_pool", "code002.recorded.jsonl.gz")  # the card's statistics: recorded answers
    assert cli.main(["rerank", "--input", str(pool), "--metrics", str(met), "--bootstrap", "200"]) == 0
    stats = json.loads(bundled_path("gsm8k_pool", "stats.json").read_text())["stats"]["code002"]
    metrics = json.loads(met.read_text())
    # The data card's statistics (computed by scripts/build_gsm8k_pool.py, in percent) agree.
    for method in ("oracle", "random"):
        assert 100 * metrics[method]["accuracy"] == pytest.approx(stats[method], abs=1e-6)
    # The card votes over raw per-setting answers; merged duplicates keep the first setting's
    # answer, which moves one tie on 1,319 problems.
    assert 100 * metrics["majority_vote"]["accuracy"] == pytest.approx(stats["majority_vote"], abs=0.2)


def test_rerank_wikitq_reports_both_checkers(tmp_path, capsys):
    def cand(program, key, lever, official):
        ex = Execution("ok", key, key, correct=lever, details={"correct_lever": lever, "correct_official": official})
        return Candidate(program=program, execution=ex)

    problems = [Problem("w0", "wikitq", "q", {"table_id": "t"}, ["12,467"], (cand("a", "1", True, False), cand("b", "2", False, False))),
                Problem("w1", "wikitq", "q", {"table_id": "t"}, ["x"], (cand("c", "3", True, True),))]
    path = tmp_path / "wikitq.executed.jsonl"
    write_problems(path, problems)
    assert cli.main(["rerank", "--input", str(path), "--bootstrap", "10"]) == 0
    out = capsys.readouterr().out
    lever_part, official_part = out.split("WikiTQ correctness: official evaluator")
    assert "WikiTQ correctness: LEVER's relaxed check" in lever_part
    oracle = [line for line in out.splitlines() if line.startswith("| oracle")]
    assert len(oracle) == 2 and "| 100.0 |" in oracle[0] and "| 50.0 |" in oracle[1]


def _reversed_pool(tmp_path, executed):
    """The same problems with every candidate list reversed (what a re-export can do)."""
    from lever_jax.data.jsonl import read_problems

    problems = [p.replace(candidates=tuple(reversed(p.candidates))) for p in read_problems(executed)]
    path = tmp_path / "reversed.jsonl"
    write_problems(path, problems)
    return path


def test_scores_of_another_candidate_order_are_refused(tmp_path, executed, capsys):
    ver = _scores(tmp_path, [("p0", [math.log(0.1), math.log(0.1), math.log(0.9)]), ("p1", [math.log(0.6), math.log(0.5)])])
    written = tmp_path / "written.scores.json"
    assert cli.main(["rerank", "--input", str(executed), "--verifier-scores", str(ver), "--output", str(written),
                     "--bootstrap", "20"]) == 0
    doc = json.loads(written.read_text())
    assert all(len(c["program_digest"]) == 16 for p in doc["problems"] for c in p["candidates"])
    capsys.readouterr()
    # the file `rerank --output` wrote reads back against its own executed file
    assert cli.main(["rerank", "--input", str(executed), "--verifier-scores", str(written), "--bootstrap", "20"]) == 0
    capsys.readouterr()
    flipped = _reversed_pool(tmp_path, executed)
    assert cli.main(["rerank", "--input", str(flipped), "--verifier-scores", str(written), "--bootstrap", "20"]) == 2
    line = _one_error_line(capsys)
    assert "written.scores.json" in line and "problems[0].candidates[0].program_digest" in line, line
    assert "problem 'p0' candidate 0" in line and "reversed.jsonl" in line, line
    # an older file without digests: the stored fields still catch the reorder
    for problem in doc["problems"]:
        for cand in problem["candidates"]:
            del cand["program_digest"]
    written.write_text(json.dumps(doc))
    assert cli.main(["rerank", "--input", str(flipped), "--verifier-scores", str(written), "--bootstrap", "20"]) == 2
    line = _one_error_line(capsys)
    assert "problems[0].candidates[0].correct" in line and "problem 'p0' candidate 0" in line, line
