"""The one error convention: a user mistake is ONE stderr line, exit 2, no traceback; a runtime
failure is one line, exit 1 (traceback only with --debug / LEVER_JAX_DEBUG=1)."""
from __future__ import annotations

import argparse
import gzip
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lever_jax.data.errors import UserError

REPO = Path(__file__).resolve().parents[1]
cli = importlib.import_module("lever_jax.cli.main")  # the module (lever_jax.cli.main is also the function)


def _run(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    full_env.pop("LEVER_JAX_DEBUG", None) if not env or "LEVER_JAX_DEBUG" not in env else None
    return subprocess.run([sys.executable, "-m", "lever_jax.cli", *argv], capture_output=True, text=True,
                          timeout=120, env=full_env, cwd=REPO)


def _assert_user_error(proc: subprocess.CompletedProcess, *fragments: str,
                       prefix: str = "lever-jax: error: ") -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(prefix), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("cli_errors")
    empty = root / "empty.jsonl"
    empty.write_text("")
    empty_gz = root / "empty.jsonl.gz"
    with gzip.open(empty_gz, "wb"):
        pass
    completions = root / "c.jsonl"
    completions.write_text('{"problem_id": "gsm8k-test-0000", "choices": [{"text": "answer = 1"}]}\n')
    corrupt_gz = root / "corrupt.jsonl.gz"  # a gzip header, then a deflate stream zlib rejects
    data = gzip.compress(completions.read_bytes() * 100)
    corrupt_gz.write_bytes(data[:10] + bytes([data[10] ^ 0xFF, data[11] ^ 0x55]) + data[12:])
    return {"root": root, "empty": empty, "empty_gz": empty_gz, "completions": completions,
            "corrupt_gz": corrupt_gz}


def test_unknown_command_and_missing_argument():
    _assert_user_error(_run("frobnicate"), "invalid choice: 'frobnicate'")
    _assert_user_error(_run("import", "--format", "openai"), "import: the following arguments are required",
                       "--help")


def test_bad_flag_value_type():
    _assert_user_error(_run("prompts", "--dataset", "gsm8k", "--split", "test", "--limit", "x"),
                       "argument --limit: invalid int value")


def test_import_unknown_split(files):
    _assert_user_error(_run("import", "--format", "openai", "--dataset", "gsm8k", "--split", "dev",
                            "--input", str(files["completions"]), "--output", str(files["root"] / "o.jsonl")),
                       "--split: gsm8k has no split 'dev'; splits: train, test")


@pytest.mark.parametrize("which, message", [
    ("empty", "empty file"), ("empty_gz", "empty file (gzip holds no data)"),
    ("root", "is a directory"), ("missing", "no such file"),
    ("corrupt_gz", "not a readable gzip file (Error -3 while decompressing")])
def test_import_bad_input_path(files, which, message):
    path = files["root"] / "nope.jsonl" if which == "missing" else files[which]
    _assert_user_error(_run("import", "--format", "openai", "--dataset", "gsm8k", "--split", "test",
                            "--input", str(path), "--output", str(files["root"] / "o.jsonl")),
                       f"--input {path}: {message}")


def test_import_lever_needs_dataset(files):
    _assert_user_error(_run("import", "--format", "lever", "--input", str(files["completions"]),
                            "--output", str(files["root"] / "o.jsonl")), "--dataset: cannot tell the dataset")


def test_import_openai_needs_split(files):
    _assert_user_error(_run("import", "--format", "openai", "--dataset", "gsm8k", "--input",
                            str(files["completions"]), "--output", str(files["root"] / "o.jsonl")),
                       "needs --dataset and --split")


def test_import_bad_line_names_file_and_line(files):
    bad = files["root"] / "bad.jsonl"
    bad.write_text('{"problem_id": "gsm8k-test-0000", "choices": []}\n'
                   '{"problem_id": "nope", "choices": []}\n')
    _assert_user_error(_run("import", "--format", "openai", "--dataset", "gsm8k", "--split", "test",
                            "--input", str(bad), "--output", str(files["root"] / "o.jsonl")),
                       f"{bad}:2: field 'problem_id'")


def test_prompts_unknown_split():
    _assert_user_error(_run("prompts", "--dataset", "mbpp", "--split", "dev2"), "--split: mbpp has no split")


def test_execute_bad_flag_and_directory(files):
    out = str(files["root"] / "x.jsonl")
    _assert_user_error(_run("execute", "--dataset", "gsm8k", "--input", str(files["empty"]), "--output", out,
                            "--timeout", "0"), "--timeout: must be > 0, got 0.0")
    _assert_user_error(_run("execute", "--dataset", "gsm8k", "--input", str(files["root"]), "--output", out),
                       "is a directory")


def test_rerank_directory_and_missing_file(files):
    _assert_user_error(_run("rerank", "--input", str(files["root"])), str(files["root"]))
    _assert_user_error(_run("rerank", "--input", str(files["root"] / "missing.jsonl")), "no such file")


def test_train_gin_syntax_error(files):
    bad = files["root"] / "bad.gin"
    bad.write_text("# comment\ntrain.train_steps 3\n")
    _assert_user_error(_run("train", "--gin_file", str(bad)), "bad.gin", "Couldn't parse statement")


# -- in-process: the classification itself (no subprocess, no heavy imports) --------------------


def _fails_with(exc: BaseException):
    def func(args: argparse.Namespace) -> int:
        raise exc
    return func


def test_runtime_failure_is_one_line_exit_1(capsys):
    assert cli.run_command(_fails_with(ValueError("boom\nsecond line")), argparse.Namespace(), "rerank",
                           debug=False) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("lever-jax rerank failed: ValueError: boom | second line")
    assert "--debug" in err[0]


def test_sigterm_ends_any_command_like_ctrl_c_after_its_cleanup(capsys):
    """Every command (not only `sample`): SIGTERM runs the command's `finally` blocks (atomic
    writers remove their temp files), prints one line, exits 130, and the handler is restored."""
    import signal

    cleaned = []

    def killed(args: argparse.Namespace) -> int:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            return 0
        finally:
            cleaned.append(True)

    before = signal.getsignal(signal.SIGTERM)
    assert cli.run_command(killed, argparse.Namespace(), "execute", debug=False) == 130
    assert cleaned == [True] and capsys.readouterr().err.strip() == "lever-jax: interrupted"
    assert signal.getsignal(signal.SIGTERM) is before


def test_debug_prints_the_traceback(capsys):
    assert cli.run_command(_fails_with(ValueError("boom")), argparse.Namespace(), "rerank", debug=True) == 1
    assert "Traceback" in capsys.readouterr().err


def test_debug_flag_anywhere_and_env(monkeypatch):
    monkeypatch.delenv("LEVER_JAX_DEBUG", raising=False)
    assert cli._debug_requested(["rerank", "--debug", "--input", "x"]) == (True, ["rerank", "--input", "x"])
    assert cli._debug_requested(["rerank", "--", "--debug"]) == (False, ["rerank", "--", "--debug"])
    monkeypatch.setenv("LEVER_JAX_DEBUG", "1")
    assert cli._debug_requested(["rerank"])[0] is True


@pytest.mark.parametrize("exc, expected", [
    (UserError("--flag: bad"), "--flag: bad"),
    (SystemExit("at least one --gin_file is required"), "at least one --gin_file is required"),
    (IsADirectoryError(21, "Is a directory", "/tmp"), "/tmp: Is a directory"),
])
def test_user_error_mapping(capsys, exc, expected):
    assert cli.run_command(_fails_with(exc), argparse.Namespace(), "x", debug=False) == 2
    assert capsys.readouterr().err == f"lever-jax: error: {expected}\n"


def test_data_file_error_is_a_user_error(capsys):
    from lever_jax.data.jsonl import DataFileError

    exc = DataFileError("f.jsonl", 3, "candidates", "expected a list")
    assert cli.run_command(_fails_with(exc), argparse.Namespace(), "x", debug=False) == 2
    assert capsys.readouterr().err == f"lever-jax: error: {exc}\n"


def test_user_error_inside_a_gin_configurable_drops_gins_context(capsys):
    import gin

    with gin.unlock_config():  # an earlier `lever-jax run` in this process leaves gin's config locked
        @gin.configurable
        def cli_errors_train(task: str = "x") -> None:
            raise UserError(f"no lever task {task!r}")

    def func(args: argparse.Namespace) -> int:
        gin.clear_config()
        gin.parse_config(["cli_errors_train.task = 'nope'"])
        cli_errors_train()
        return 0

    assert cli.run_command(func, argparse.Namespace(), "train", debug=False) == 2
    gin.clear_config()
    assert capsys.readouterr().err == "lever-jax: error: no lever task 'nope'\n"
