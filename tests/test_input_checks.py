"""Inputs no command can mean are refused before any work, in one line, exit 2: an unknown
database / table id, a file of only blank lines, and a `lever-jax run` config field out of range."""
from __future__ import annotations

import gzip
import json

import pytest

from lever_jax.cli.main import main as cli_main


def _one_error_line(capsys) -> str:
    captured = capsys.readouterr()  # (the SQL executors warn first when the sandbox cannot see tmp_path's db root)
    lines = [ln for ln in captured.err.strip().splitlines() if not ln.startswith("lever-jax: warning: database root")]
    assert len(lines) == 1 and lines[0].startswith("lever-jax: error: ") and "Traceback" not in captured.err, \
        captured.err
    return lines[0]


def _sql_problem(pid: str, dataset: str, key: str, value: str) -> dict:
    return {"problem_id": pid, "dataset": dataset, "question": "How many singers are there?",
            "context": {key: value}, "gold": "SELECT count(*) FROM singer" if dataset == "spider" else ["6"],
            "candidates": [{"program": "SELECT count(*) FROM singer"}, {"program": "SELECT 1"}]}


@pytest.mark.parametrize("dataset,key,good,bad,suggested", [
    ("spider", "db_id", "concert_singer", "concert_singr", "concert_singer"),
    ("wikitq", "table_id", "200_0", "200_00000", None),
    ("wikitq_binder", "table_id", "200_18", "200_188888", None),
])
def test_execute_refuses_an_unknown_database_before_running(tmp_path, monkeypatch, capsys, dataset, key, good, bad,
                                                            suggested):
    monkeypatch.setenv("LEVER_JAX_DB_DIR", str(tmp_path / "db"))
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps(_sql_problem("a", dataset, key, good)) + "\n"
                       + json.dumps(_sql_problem("b", dataset, key, bad)) + "\n")
    out = tmp_path / "executed.jsonl"
    assert cli_main(["execute", "--dataset", dataset, "--input", str(samples), "--output", str(out),
                     "--no-cache", "--no-progress", "--workers", "1"]) == 2
    line = _one_error_line(capsys)
    assert f"samples.jsonl:2: field 'context.{key}'" in line and repr(bad) in line and "known, e.g." in line, line
    if suggested:
        assert f"did you mean {suggested!r}" in line, line
    assert not out.exists()


def test_run_refuses_an_unknown_spider_database_before_executing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LEVER_JAX_DB_DIR", str(tmp_path / "db"))
    samples = tmp_path / "mine.samples.jsonl"
    samples.write_text(json.dumps(_sql_problem("a", "spider", "db_id", "concert_singr")) + "\n")
    out = tmp_path / "run"
    assert cli_main(["run", "--quick", "--input", str(samples), "--out", str(out), "--no-progress",
                     "--gin_bindings", "HeadConfig.use_candidate_features = False"]) == 2
    line = _one_error_line(capsys)
    assert "mine.samples.jsonl:1: field 'context.db_id'" in line and "did you mean 'concert_singer'" in line, line
    assert not (out / "executed").exists()


@pytest.mark.parametrize("name", ["blank.jsonl", "blank.jsonl.gz"])
def test_a_file_of_blank_lines_is_refused(tmp_path, capsys, name):
    path = tmp_path / name
    text = "\n  \n\t\n\n"
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    out = tmp_path / "out.jsonl"
    assert cli_main(["execute", "--dataset", "gsm8k", "--input", str(path), "--output", str(out), "--no-cache",
                     "--no-progress", "--workers", "1"]) == 2
    line = _one_error_line(capsys)
    assert name in line and "only blank lines" in line, line
    assert cli_main(["inputs", "--input", str(path), "--output", str(out)]) == 2
    assert name in _one_error_line(capsys)
    assert cli_main(["rerank", "--input", str(path)]) == 2
    assert name in _one_error_line(capsys)
    assert not out.exists()


@pytest.mark.parametrize("binding,field", [
    ("RunConfig.execution_workers = 0", "RunConfig.execution_workers"),
    ("RunConfig.dev_fraction = 1.5", "RunConfig.dev_fraction"),
    ("RunConfig.bootstrap = 0", "RunConfig.bootstrap"),
    ("RunConfig.execution_timeout_s = -1.0", "RunConfig.execution_timeout_s"),
])
def test_run_checks_its_whole_config_before_any_work(tmp_path, capsys, binding, field):
    samples = tmp_path / "mine.samples.jsonl"
    samples.write_text(json.dumps({"problem_id": "p", "dataset": "gsm8k", "question": "q", "gold": 2.0,
                                   "candidates": [{"program": "answer = 2"}]}) + "\n")
    out = tmp_path / "run"
    assert cli_main(["run", "--quick", "--input", str(samples), "--out", str(out), "--no-progress",
                     "--gin_bindings", binding]) == 2
    line = _one_error_line(capsys)
    assert field in line, line
    assert not out.exists()


def test_run_refuses_a_blank_input_file(tmp_path, capsys):
    blank = tmp_path / "blank.samples.jsonl"
    blank.write_text("\n\n")
    assert cli_main(["run", "--quick", "--input", str(blank), "--out", str(tmp_path / "run"), "--no-progress"]) == 2
    line = _one_error_line(capsys)
    assert "RunConfig.input" in line and "blank.samples.jsonl" in line and "blank lines" in line, line
