"""``lever-jax sample`` on the real llama.cpp runtime (xllamacpp) with a tiny random GGUF model:
both backends (in-process, and llama.cpp's own HTTP listener as ``--server``), the samples file
that ``lever-jax execute`` reads, log-probs, merged counts, the greedy decode, resume after a
kill, reproducibility, and one-line errors."""
from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import xllamacpp  # noqa: F401 - the `sample` extra is part of the test install: missing means broken

from lever_jax.cli.main import main
from lever_jax.data.jsonl import iter_json_lines, read_problems
from tests.gguf_tiny import write_tiny_gguf

MBPP = ["--dataset", "mbpp", "--split", "test"]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf"))


def _sample(model: str, out: Path, *extra: str) -> int:
    return main(["sample", *MBPP, "--model", model, "--threads", "1", "--max-tokens", "12",
                 "--output", str(out), *extra])


def _summary(capsys: pytest.CaptureFixture[str]) -> dict:
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    return json.loads(lines[-1])


def _journal_sums(journal: Path) -> dict[str, list[float]]:
    sums: dict[str, list[float]] = {}
    for _lineno, obj in iter_json_lines(journal):
        for s in obj["samples"]:
            sums.setdefault(obj["problem_id"], []).append(math.fsum(s["logprobs"]))
    return sums


def test_samples_file_feeds_execute(tiny_model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "pool.samples.jsonl.gz"
    assert _sample(tiny_model, out, "--limit", "3", "--n", "4") == 0
    summary = _summary(capsys)
    assert summary["problems"] == 3 and summary["sequences_decoded"] == 3 * 5
    problems = list(read_problems(out))
    assert [p.problem_id for p in problems] == ["mbpp-11", "mbpp-12", "mbpp-13"]
    sums = _journal_sums(Path(f"{out}.journal.jsonl"))
    for problem in problems:
        assert sum(c.count for c in problem.candidates) == 4
        # log-probs are the model's own distribution: even the temperature-0 decode's are < 0
        assert problem.greedy is not None and problem.greedy.gen_logprob < 0
        for cand in problem.candidates:
            assert math.isfinite(cand.gen_logprob) and cand.gen_logprob < 0 and cand.num_tokens >= 1
            # the candidate's log-prob is the sum of its tokens' log-probs as llama.cpp returned them
            assert any(math.isclose(cand.gen_logprob, s, abs_tol=1e-9) for s in sums[problem.problem_id])
    executed = tmp_path / "pool.executed.jsonl.gz"
    assert main(["execute", "--dataset", "mbpp", "--input", str(out), "--output", str(executed),
                 "--workers", "1"]) == 0
    done = list(read_problems(executed, require_execution=True))
    assert len(done) == 3 and all(p.greedy.execution is not None for p in done)


def test_identical_programs_merge_with_counts(tiny_model: str, tmp_path: Path) -> None:
    out = tmp_path / "low_t.jsonl"
    assert _sample(tiny_model, out, "--limit", "2", "--n", "6", "--temperature", "0.05", "--max-tokens", "3") == 0
    for problem in read_problems(out):
        assert sum(c.count for c in problem.candidates) == 6
        assert max(c.count for c in problem.candidates) > 1  # near-greedy sampling repeats itself
        assert len({c.program for c in problem.candidates}) == len(problem.candidates)


def test_same_seed_parallel_1_reproduces_the_file(tiny_model: str, tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert _sample(tiny_model, a, "--limit", "2", "--n", "3", "--seed", "7") == 0
    assert _sample(tiny_model, b, "--limit", "2", "--n", "3", "--seed", "7") == 0
    assert a.read_bytes() == b.read_bytes()
    c = tmp_path / "c.jsonl"
    assert _sample(tiny_model, c, "--limit", "2", "--n", "3", "--seed", "8") == 0
    assert c.read_bytes() != a.read_bytes()


def _sample_cmd(model: str, out: Path) -> list[str]:
    return [sys.executable, "-m", "lever_jax.cli", "sample", *MBPP, "--model", model, "--threads", "1",
            "--max-tokens", "24", "--n", "3", "--limit", "40", "--output", str(out)]


_ENV = {**os.environ, "LEVER_JAX_PROGRESS": "off"}


def _signal_after_two_problems(cmd: list[str], journal: Path, sig: int) -> subprocess.CompletedProcess[str]:
    """Run ``cmd``, send ``sig`` once the journal holds two problems, wait for the exit."""
    proc = subprocess.Popen(cmd, env=_ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if journal.exists() and journal.read_bytes().count(b"\n") >= 2:
            proc.send_signal(sig)
            break
        time.sleep(0.005)
    _, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(cmd, proc.returncode, "", err)


@pytest.mark.slow
def test_sigterm_stops_cleanly_without_a_temp_file(tiny_model: str, tmp_path: Path) -> None:
    out = tmp_path / "stopped.jsonl"
    journal = Path(f"{out}.journal.jsonl")
    stopped = _signal_after_two_problems(_sample_cmd(tiny_model, out), journal, signal.SIGTERM)
    assert stopped.returncode == 130 and "interrupted" in stopped.stderr, stopped.stderr
    assert "Traceback" not in stopped.stderr
    assert journal.read_bytes().count(b"\n") >= 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [journal.name]  # no output, no partial temp file


@pytest.mark.slow
def test_resume_after_kill_resamples_nothing(tiny_model: str, tmp_path: Path) -> None:
    out = tmp_path / "killed.jsonl"
    journal = Path(f"{out}.journal.jsonl")
    cmd, env = _sample_cmd(tiny_model, out), _ENV
    assert _signal_after_two_problems(cmd, journal, signal.SIGKILL).returncode == -signal.SIGKILL
    journaled = journal.read_bytes().count(b"\n")
    assert journaled >= 2
    with open(journal, "ab") as handle:  # a line cut short by the kill: ignored and sampled again
        handle.write(b'{"format": "lever-jax/sample-journal/v1", "key": "dead')
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stderr.strip().splitlines()[-1])
    assert summary["from_journal"] == journaled
    assert summary["sequences_decoded"] == (40 - journaled) * 4
    assert len(list(read_problems(out))) == 40
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert json.loads(again.stderr.strip().splitlines()[-1])["sequences_decoded"] == 0


def test_server_backend_on_llamacpp_http_listener(tiny_model: str, tmp_path: Path, capsys) -> None:
    from lever_jax.sampling.backends import LlamaCppBackend

    served = LlamaCppBackend(tiny_model, threads=1, parallel=2)
    try:
        prompts = tmp_path / "prompts.jsonl"
        assert main(["prompts", *MBPP, "--limit", "2", "--output", str(prompts)]) == 0
        out = tmp_path / "server.jsonl"
        assert main(["sample", "--input", str(prompts), "--split", "test", "--server", served.url,
                     "--server-extra", '{"top_k": 0, "min_p": 0}', "--parallel", "2", "--n", "3",
                     "--max-tokens", "12", "--output", str(out)]) == 0
    finally:
        served.close()
    summary = _summary(capsys)
    assert summary["model"].startswith("server-model:") and summary["sequences_decoded"] == 2 * 4
    problems = list(read_problems(out))
    assert len(problems) == 2
    assert all(math.isfinite(c.gen_logprob) and c.num_tokens for p in problems for c in p.candidates)


def test_shared_prefill_one_request_per_problem_on_both_backends(tiny_model: str, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """``--shared-prefill``: the n samples come back from one request with n choices (llama.cpp
    prefills the prompt once), with the same file contract; it is the default where --parallel >= n,
    and never reuses the journal of the one-request-per-sample settings (a different key)."""
    from lever_jax.sampling.backends import LlamaCppBackend

    out = tmp_path / "shared.jsonl"
    assert _sample(tiny_model, out, "--limit", "2", "--n", "3", "--parallel", "4", "--shared-prefill") == 0
    assert _summary(capsys)["sequences_decoded"] == 2 * 4
    sums = _journal_sums(Path(f"{out}.journal.jsonl"))
    for problem in read_problems(out):
        assert sum(c.count for c in problem.candidates) == 3 and problem.greedy is not None
        for cand in problem.candidates:
            assert any(math.isclose(cand.gen_logprob, s, abs_tol=1e-9) for s in sums[problem.problem_id])
    # with --parallel >= n it is the default: the same command without the flag reuses the journal
    assert _sample(tiny_model, out, "--limit", "2", "--n", "3", "--parallel", "4",
                   "--journal", f"{out}.journal.jsonl") == 0
    assert _summary(capsys)["from_journal"] == 2
    # the same journal under the one-request-per-sample settings: nothing reused
    assert _sample(tiny_model, out, "--limit", "2", "--n", "3", "--parallel", "4", "--no-shared-prefill",
                   "--journal", f"{out}.journal.jsonl") == 0
    assert _summary(capsys)["from_journal"] == 0
    served = LlamaCppBackend(tiny_model, threads=1, parallel=4)
    try:
        via_http = tmp_path / "shared_http.jsonl"
        assert main(["sample", *MBPP, "--limit", "2", "--server", served.url, "--server-extra",
                     '{"top_k": 0, "min_p": 0}', "--parallel", "4", "--n", "3", "--max-tokens", "12",
                     "--shared-prefill", "--output", str(via_http)]) == 0
    finally:
        served.close()
    assert _summary(capsys)["sequences_decoded"] == 2 * 4
    assert all(sum(c.count for c in p.candidates) == 3 for p in read_problems(via_http))


def test_shared_prefill_asks_once_and_redraws_a_blank_choice_alone() -> None:
    from lever_jax.data.schema import Problem
    from lever_jax.sampling.backends import Completion, Request
    from lever_jax.sampling.pool import PromptRecord, complete_shared_prefill, requests_for
    from lever_jax.sampling.settings import SampleSettings, sample_seed

    class Fake:
        def __init__(self) -> None:
            self.calls: list[tuple[str, int, int]] = []

        def complete(self, request: Request) -> Completion:
            self.calls.append(("one", request.seed, 1))
            return Completion("redrawn", ("r",), (-1.0,), "stop")

        def complete_choices(self, request: Request, n: int) -> list[Completion | None]:
            self.calls.append(("many", request.seed, n))
            return [Completion(f"s{i}", ("t",), (-0.5,), "stop") if i != 1 else None for i in range(n)]

    record = PromptRecord(Problem("p1", "mbpp", "q", {}, None, ()), "prompt", ("\n",))
    backend = Fake()
    got = complete_shared_prefill(backend, requests_for(record, SampleSettings(n=3, greedy=False)))
    assert [c.text for c in got] == ["s0", "redrawn", "s2"]
    assert backend.calls == [("many", sample_seed(0, "p1", 0), 3), ("one", sample_seed(0, "p1", 1) + 1, 1)]


@pytest.mark.parametrize("case", ["missing", "corrupt", "not_gguf", "hash", "server_down", "bad_flag", "both",
                                  "unknown_problem", "shared_prefill_slots"])
def test_user_errors_are_one_line_exit_2(case: str, tiny_model: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    model = tiny_model
    args = [*MBPP, "--limit", "1"]
    if case == "missing":
        model = str(tmp_path / "nope.gguf")
    elif case == "corrupt":
        model = str(tmp_path / "cut.gguf")
        Path(model).write_bytes(Path(tiny_model).read_bytes()[:50_000])
    elif case == "not_gguf":
        model = str(tmp_path / "text.gguf")
        Path(model).write_text("hello")
    elif case == "hash":
        args += ["--model-sha256", "0" * 64]
    elif case == "bad_flag":
        args += ["--top-p", "2"]
    elif case == "shared_prefill_slots":  # llama.cpp refuses n choices beyond its slots
        args += ["--shared-prefill", "--n", "3", "--parallel", "2"]
    elif case == "unknown_problem":
        prompts = tmp_path / "p.jsonl"
        prompts.write_text(json.dumps({"problem_id": "mbpp-99999", "dataset": "mbpp", "prompt": "x"}) + "\n")
        args = ["--input", str(prompts), "--split", "test"]
    source = ["--server", "http://127.0.0.1:9"] if case == "server_down" else ["--model", model]
    if case == "both":
        source += ["--server", "http://127.0.0.1:9"]
    code = main(["sample", *args, *source, "--output", str(tmp_path / "o.jsonl")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("lever-jax: error:"), err
    assert not (tmp_path / "o.jsonl").exists()


def test_bench_sample_dry_run(tiny_model: str, tmp_path: Path) -> None:
    """scripts/bench_sample.py runs its four arms on the tiny model and reports the ratios."""
    script = Path(__file__).resolve().parents[1] / "scripts" / "bench_sample.py"
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, str(script), "--model", tiny_model, "--problems", "2", "--every", "3",
                           "--n", "2", "--parallel", "3", "--threads", "1", "--max-tokens", "8", "--output", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(out.read_text())
    ours = {"lever_jax_sample", "lever_jax_sample_shared_prefill"}
    assert set(report["arms"]) == {"llamacpp_sequential", "llamacpp_batched"} | ours
    assert all(arm["tokens"] > 0 for arm in report["arms"].values())
    assert all(report["arms"][arm]["tokens"] <= 2 * 2 * 8 for arm in ours)
    for key in ("ratio_vs_batched", "ratio_vs_sequential", "ratio_vs_batched_net", "ratio_vs_sequential_net"):
        assert set(report[key]) == ours and all(v > 0 for v in report[key].values())
    for arm in ours:  # the start-up (a re-run that decodes nothing) is part of the whole command's time
        assert report["arms"][arm]["startup_seconds"] > 0
        assert report["arms"][arm]["tokens_per_s_net"] >= report["arms"][arm]["tokens_per_s"]


def test_a_blank_completion_without_log_probs_is_redrawn_with_the_next_seed() -> None:
    """llama.cpp answers a completion whose stop string begins in its first token with a blank text
    and no log-probs (seen on Spider dev: it stopped a 268-problem run). Such a sample is drawn again
    with seed + 1, + 2, ... (deterministic, so a resumed run redraws the same); a greedy decode that
    stays blank is the empty program with no tokens; other replies without log-probs stay an error."""
    from lever_jax.sampling.backends import BlankCompletion, Request, SamplingError, parse_choice
    from lever_jax.sampling.pool import BLANK_REDRAWS, complete_redrawing_blanks

    with pytest.raises(BlankCompletion):
        parse_choice({"text": " ", "logprobs": None, "finish_reason": "stop"}, "llama.cpp")
    with pytest.raises(SamplingError, match="carries no token log-probs") as err:
        parse_choice({"text": "SELECT 1", "logprobs": None}, "llama.cpp")
    assert not isinstance(err.value, BlankCompletion)

    class Blank:
        def __init__(self, blank_seeds: set[int]) -> None:
            self.blank_seeds, self.seeds = blank_seeds, []

        def complete(self, request: Request):
            self.seeds.append(request.seed)
            if request.seed in self.blank_seeds or request.temperature == 0.0:
                return parse_choice({"text": "\n", "logprobs": None, "finish_reason": "stop"}, "fake")
            return parse_choice({"text": "x", "logprobs": {"tokens": ["x"], "token_logprobs": [-0.5]}}, "fake")

    sampled = Request("p", ("\n\n",), 8, 0.6, 1.0, 41)
    backend = Blank({41, 42})
    assert complete_redrawing_blanks(backend, sampled).token_logprobs == (-0.5,) and backend.seeds == [41, 42, 43]
    backend = Blank({41})
    assert complete_redrawing_blanks(backend, sampled).text == "x" and backend.seeds == [41, 42]
    greedy = complete_redrawing_blanks(Blank(set()), Request("p", ("\n\n",), 8, 0.0, 1.0, 0))
    assert (greedy.text, greedy.tokens) == ("", ())
    with pytest.raises(SamplingError, match="blank completions in a row"):
        complete_redrawing_blanks(Blank(set(range(41, 41 + BLANK_REDRAWS + 1))), sampled)
