"""Build the bundled GSM8k candidate pools from Faithful-CoT and Program-of-Thoughts outputs.

Reads the released LLM outputs on the GSM8k *test* set (one program per problem per setting):
  <src>/faithful_cot_predictions/<setting>.predictions.jsonl.gz   (Faithful-CoT, field ``completion``)
  <src>/pot_codex_outputs/gsm8K_s0_e-1_11_17_10_20.jsonl.gz       (PoT few-shot, Codex, greedy)
  <src>/pot_codex_outputs/gsm8K_zs_s0_e-1_11_19_09_55.jsonl.gz    (PoT zero-shot, Codex)
and writes, under lever_jax/data/bundled/gsm8k_pool/:
  code002.samples.jsonl.gz / code002.recorded.jsonl.gz        (code-davinci-002: 12 settings + 2 PoT;
  code002.executed.jsonl.gz is then written by `lever-jax execute`, see the data card)
  other_llms.samples.jsonl.gz / other_llms.recorded.jsonl.gz  (code001, text002/003, gpt-3.5, gpt-4)
  DATA_CARD.md (statistics computed here) and the licence files.

One record per test problem; identical programs (exact text after stripping) are merged with
``count`` = number of settings that produced them and ``source`` = the comma-joined settings.
``execution`` is filled from the answers the releases *recorded* (no code is run here): the
executor re-runs the samples files. Deterministic: same inputs -> byte-identical outputs.

    python scripts/build_gsm8k_pool.py --src /path/to/shared/data/gsm8k
"""
from __future__ import annotations

import argparse
import ast
import collections
import fractions
import gzip
import json
import math
import re
import shutil
import sys
from pathlib import Path
from typing import Any, Iterable

from lever_jax.data import Candidate, Execution, Problem, bundled_path, jsonl
from lever_jax.data.datasets import gsm8k

CODE002_SETTINGS = (
    "code002_NL+SL",  # the standard greedy Faithful-CoT setting: marked is_greedy
    "code002_NL+SL_exemplarset1",
    "code002_NL+SL_exemplarset2",
    "code002_NL+SL_exemplarset3",
    "code002_NL+SL_exemplarset4",
    "code002_NL+SL_exemplarset5",
    "code002_noNL",
    "code002_noNLbutnudge",
    "code002_norationale",
    "code002_prompt_variation1",
    "code002_prompt_variation2",
    "code002_prompt_variation3",
)
# code002_nosolver is NOT included: its answers are predicted by the LM, not executed.
POT_FILES = (
    ("pot_codex_fewshot", "gsm8K_s0_e-1_11_17_10_20.jsonl.gz"),
    ("pot_codex_zeroshot", "gsm8K_zs_s0_e-1_11_19_09_55.jsonl.gz"),
)
OTHER_LLMS = ("code001", "text002", "text003", "gpt-3.5-turbo", "gpt4")
OTHER_SETTINGS = tuple(f"{m}_{p}" for m in OTHER_LLMS for p in ("NL+SL", "noNL"))
GREEDY_SETTING = "code002_NL+SL"
ABS_TOL_CORRECT = 1e-4  # correct = |answer - gold| <= 1e-4
GROUP_DECIMALS = 6  # result keys: answers rounded to 1e-6 (LEVER groups GSM8k answers at 1e-6)

Raw = tuple[str, str, Any]  # (source, program, recorded answer)


# ----------------------------------------------------------------------------------------------
# Reading the releases


def read_faithful(path: Path, n_problems: int) -> dict[int, tuple[str, Any]]:
    out: dict[int, tuple[str, Any]] = {}
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            index = int(row["id"])
            if not 0 <= index < n_problems or index in out:
                raise ValueError(f"{path}: bad or repeated id {index}")
            out[index] = (row["completion"], row["answer"])
    return out


def read_pot(path: Path, index_by_question: dict[str, int]) -> tuple[dict[int, tuple[str, Any]], int]:
    """PoT rows matched to test problems by question text; prompt lines (``{"prompt": ...}``) skipped."""
    out: dict[int, tuple[str, Any]] = {}
    unmatched = 0
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if "prompt" in row and "question" not in row:
                continue
            index = index_by_question.get(row["question"])
            if index is None:
                unmatched += 1
                continue
            generated = row["generated"]
            if isinstance(generated, str) and generated.startswith("["):
                generated = ast.literal_eval(generated)
            if isinstance(generated, list):
                generated = generated[0]
            out.setdefault(index, (generated, row["executed"]))
    return out, unmatched


# ----------------------------------------------------------------------------------------------
# Recorded answers -> execution


def recorded_number(answer: Any) -> float | None:
    """The recorded answer as a finite float (plain numbers and fractions such as ``10/3``), or None
    (missing, ``[invalid]``, ``None``, tuples, unsolved sympy expressions)."""
    if answer is None or isinstance(answer, bool):
        return None
    if isinstance(answer, (int, float)):
        value = float(answer)
    else:
        text = str(answer).strip().replace(",", "")
        try:
            value = float(text)
        except ValueError:
            try:  # sympy rationals are recorded as "10/3"
                value = float(fractions.Fraction(text))
            except (ValueError, ZeroDivisionError):
                return None
    return value if math.isfinite(value) else None


def number_key(value: float) -> str:
    rounded = round(value, GROUP_DECIMALS)
    if rounded == 0:
        rounded = 0.0  # -0.0 -> 0.0
    if rounded == int(rounded) and abs(rounded) < 1e15:
        return str(int(rounded))
    return repr(rounded)


def recorded_execution(problem_id: str, index: int, answer: Any, gold: float) -> Execution:
    value = recorded_number(answer)
    if value is None:
        return Execution(
            status="error",
            result_key=f"!err:{problem_id}:{index}",  # the executors' error-key prefix
            result_text="ERROR",
            error=f"recorded answer {str(answer)[:80]!r} is not a number",
            correct=False,
            details={"recorded_answer": None if answer is None else str(answer)[:200]},
        )
    return Execution(
        status="ok",
        result_key=number_key(value),
        result_text=f"answer = {value!r}",
        error=None,
        correct=abs(value - gold) <= ABS_TOL_CORRECT,
        details={"answer": value, "recorded": True},
    )


# ----------------------------------------------------------------------------------------------
# Pool assembly


def merge(raws: list[Raw]) -> list[tuple[str, list[str], Any, bool]]:
    """Merge identical programs (after strip): (program, sources, first answer, is_greedy)."""
    merged: dict[str, list[Any]] = {}
    for source, program, answer in raws:
        key = program.strip()
        if key not in merged:
            merged[key] = [key, [], answer, False]
        entry = merged[key]
        entry[1].append(source)
        entry[3] = entry[3] or source == GREEDY_SETTING
    return [tuple(v) for v in merged.values()]  # type: ignore[misc]


def build_pool(base: list[Problem], per_source: dict[str, dict[int, tuple[str, Any]]]) -> list[Problem]:
    problems = []
    for index, problem in enumerate(base):
        raws = [(s, rows[index][0], rows[index][1]) for s, rows in per_source.items() if index in rows]
        candidates = []
        for ci, (program, sources, answer, greedy) in enumerate(merge(raws)):
            candidates.append(
                Candidate(
                    program=program,
                    count=len(sources),
                    source=",".join(dict.fromkeys(sources)),
                    is_greedy=greedy,
                    execution=recorded_execution(problem.problem_id, ci, answer, problem.gold),
                )
            )
        problems.append(problem.replace(candidates=tuple(candidates)))
    return problems


# ----------------------------------------------------------------------------------------------
# Statistics (on the raw, unmerged candidates; majority ties go to the first source in order)


def pool_stats(base: list[Problem], per_source: dict[str, dict[int, tuple[str, Any]]]) -> dict[str, Any]:
    n = len(base)
    oracle = majority = random_acc = distinct = raw_total = 0.0
    merged_total = 0
    for index, problem in enumerate(base):
        raws = [(s, rows[index][0], rows[index][1]) for s, rows in per_source.items() if index in rows]
        raw_total += len(raws)
        merged_total += len({p.strip() for _, p, _ in raws})
        values = [recorded_number(a) for _, _, a in raws]
        correct = [v is not None and abs(v - problem.gold) <= ABS_TOL_CORRECT for v in values]
        oracle += any(correct)
        random_acc += sum(correct) / len(raws) if raws else 0.0
        votes: collections.OrderedDict[str, list[Any]] = collections.OrderedDict()
        for v, c in zip(values, correct):
            if v is not None:
                votes.setdefault(number_key(v), [0, c])[0] += 1
        distinct += len(votes)
        if votes:
            best = max(votes.values(), key=lambda vc: vc[0])  # max keeps the first of equal counts
            majority += best[1]
    per_source_acc = {}
    for source, rows in per_source.items():
        hits = 0
        for index, problem in enumerate(base):
            if index in rows:
                v = recorded_number(rows[index][1])
                hits += v is not None and abs(v - problem.gold) <= ABS_TOL_CORRECT
        per_source_acc[source] = {"problems": len(rows), "accuracy": 100.0 * hits / n,
                                  "executable_answers": sum(recorded_number(a) is not None for _, a in rows.values())}
    return {
        "problems": n,
        "raw_candidates": int(raw_total),
        "raw_per_problem": raw_total / n,
        "merged_candidates": merged_total,
        "merged_per_problem": merged_total / n,
        "distinct_answers_per_problem": distinct / n,
        "oracle": 100.0 * oracle / n,
        "majority_vote": 100.0 * majority / n,
        "random": 100.0 * random_acc / n,
        "per_source": per_source_acc,
    }


def strip_execution(problems: Iterable[Problem]) -> Iterable[Problem]:
    for p in problems:
        yield p.replace(candidates=tuple(c.__class__(**{**c.__dict__, "execution": None}) for c in p.candidates))


def stats_table(name: str, stats: dict[str, Any]) -> str:
    lines = [
        f"### {name}",
        "",
        "| statistic | value |",
        "|---|---|",
        f"| problems | {stats['problems']} |",
        f"| candidates (before merging) | {stats['raw_candidates']} ({stats['raw_per_problem']:.2f} / problem) |",
        f"| distinct programs (after merging) | {stats['merged_candidates']} ({stats['merged_per_problem']:.2f} / problem) |",
        f"| distinct numeric answers / problem | {stats['distinct_answers_per_problem']:.2f} |",
        f"| oracle (any candidate correct) | {stats['oracle']:.1f} |",
        f"| majority vote over answers | {stats['majority_vote']:.1f} |",
        f"| random candidate (expected) | {stats['random']:.1f} |",
        "",
        "| source | problems | numeric answers | accuracy (of all 1,319) |",
        "|---|---|---|---|",
    ]
    for source, s in stats["per_source"].items():
        lines.append(f"| {source} | {s['problems']} | {s['executable_answers']} | {s['accuracy']:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--src", type=Path, default=Path("/work/shared/data/gsm8k"))
    parser.add_argument("--out", type=Path, default=bundled_path("gsm8k_pool"))
    args = parser.parse_args(argv)

    base = gsm8k.problems_from_file(args.src / "test.jsonl.gz", "test")
    index_by_question = {p.question: i for i, p in enumerate(base)}
    fc = args.src / "faithful_cot_predictions"
    notes: list[str] = []

    code002: dict[str, dict[int, tuple[str, Any]]] = {}
    for setting in CODE002_SETTINGS:
        code002[setting] = read_faithful(fc / f"{setting}.predictions.jsonl.gz", len(base))
    for name, filename in POT_FILES:
        rows, unmatched = read_pot(args.src / "pot_codex_outputs" / filename, index_by_question)
        missing = [base[i].problem_id for i in range(len(base)) if i not in rows]
        notes.append(f"{name} ({filename}): {len(rows)} problems matched by question text, "
                     f"{unmatched} rows unmatched, missing: {', '.join(missing) or 'none'}")
        code002[name] = rows
    other = {s: read_faithful(fc / f"{s}.predictions.jsonl.gz", len(base)) for s in OTHER_SETTINGS}

    args.out.mkdir(parents=True, exist_ok=True)
    report = {}
    for name, per_source in (("code002", code002), ("other_llms", other)):
        pool = build_pool(base, per_source)
        jsonl.write_problems(args.out / f"{name}.recorded.jsonl.gz", pool)  # .executed: `lever-jax execute`
        jsonl.write_problems(args.out / f"{name}.samples.jsonl.gz", strip_execution(pool))
        report[name] = pool_stats(base, per_source)
    for lic, dest in (("faithful_cot_predictions/LICENSE", "LICENSE.Faithful-COT-MIT"),
                      ("pot_codex_outputs/LICENSE", "LICENSE.Program-of-Thoughts-MIT"),
                      ("LICENSE", "LICENSE.grade-school-math-MIT")):
        shutil.copyfile(args.src / lic, args.out / dest)
    report["code002_faithful_only"] = pool_stats(base, {s: code002[s] for s in CODE002_SETTINGS})
    jsonl.write_json(args.out / "stats.json", {"stats": report, "notes": notes})
    card = render_card(report, notes)
    with jsonl.atomic_writer(args.out / "DATA_CARD.md") as fh:
        fh.write(card)
    print(json.dumps({k: {m: v for m, v in s.items() if m != "per_source"} for k, s in report.items()}, indent=1))
    return 0


def render_card(report: dict[str, Any], notes: list[str]) -> str:
    return CARD_TEMPLATE.format(
        code002_table=stats_table("Default pool: code-davinci-002 (`code002.*`)", report["code002"]),
        other_table=stats_table("Transfer pool: other LLMs (`other_llms.*`)", report["other_llms"]),
        faithful_only=report["code002_faithful_only"],
        notes="\n".join(f"- {n}" for n in notes),
        code002_settings=", ".join(f"`{s}`" for s in CODE002_SETTINGS),
        other_settings=", ".join(f"`{s}`" for s in OTHER_SETTINGS),
    )


CARD_TEMPLATE = """# GSM8k candidate pools (real LLM programs on the GSM8k test set)

Built by `python scripts/build_gsm8k_pool.py --src <shared>/data/gsm8k` (deterministic: the same
inputs give byte-identical files). All statistics below are computed by that script (also saved
in `stats.json`).

## Files

| file | content |
|---|---|
| `code002.samples.jsonl.gz` | default pool, samples file (no execution) — what `lever-jax execute` re-runs |
| `code002.executed.jsonl.gz` | default pool **executed by `lever-jax execute`** (the inference-format result text the training tasks read) |
| `code002.recorded.jsonl.gz` | the same pool with `execution` pre-filled from the **recorded** answers |
| `other_llms.samples.jsonl.gz` / `.executed.jsonl.gz` / `.recorded.jsonl.gz` | the transfer pool (other LLMs), same layout |
| `stats.json` | the statistics below, machine-readable |

Layout: docs/data_format.md. One record per GSM8k test problem (`gsm8k-test-0000` ... `gsm8k-test-1318`,
index = line of the original `test.jsonl`), gold = the number after `####` (commas removed).

## Sources

- Faithful-CoT (Lyu et al. 2023), github.com/veronica320/Faithful-COT @ 3017843, `output_dir/GSM8K/test/<setting>/predictions.jsonl`:
  one greedy completion per problem per setting; the completion is a Python program whose
  `answer` variable is the prediction. MIT licence (`LICENSE.Faithful-COT-MIT`).
  - default pool (code-davinci-002, 12 program settings): {code002_settings}.
    `code002_nosolver` is excluded (its answers are predicted by the LM, not executed); the
    natural-language settings (`*_COT`, `*_LtM`, `*_standard`) are excluded (not programs).
  - transfer pool (code-davinci-001, text-davinci-002/003, gpt-3.5-turbo, gpt-4): {other_settings}.
- Program-of-Thoughts (Chen et al. 2022), github.com/TIGER-AI-Lab/Program-of-Thoughts @ 850399c,
  Codex outputs `gsm8K_s0_e-1_11_17_10_20.jsonl` (few-shot, source `pot_codex_fewshot`) and
  `gsm8K_zs_s0_e-1_11_19_09_55.jsonl` (zero-shot, source `pot_codex_zeroshot`); rows matched to
  test problems by question text (lines holding only `{{"prompt": ...}}` skipped). Their programs
  leave the result in **`ans`** (not `answer`). MIT licence (`LICENSE.Program-of-Thoughts-MIT`).
- GSM8k itself: github.com/openai/grade-school-math, MIT (`LICENSE.grade-school-math-MIT`).

{notes}

## Conventions

- **Merging**: identical programs (exact text after `str.strip()`) are one candidate;
  `count` = how many settings produced it, `source` = those settings comma-joined in the order
  above (e.g. `code002_NL+SL,code002_noNL`). Programs are stored stripped.
- **is_greedy**: set on the candidate produced by `code002_NL+SL` (Faithful-CoT's standard greedy
  setting, 72.3% in their paper) — the pool's "greedy" baseline. The other-LLM pool has no
  greedy-marked candidate.
- **No generation log-probabilities** exist in these releases (`gen_logprob` null): LEVER's
  fallback P_LM = count / total count applies.
- **execution (pre-filled, not executed here)**: from the answer each release recorded. `status`
  `ok` when the recorded answer parses as a finite number (including sympy
  fractions recorded as `10/3`), else `error` (`[invalid]`, `None`,
  tuples such as `(4, 6.0)`, unsolved sympy expressions, missing); `result_key` = the answer
  rounded to 1e-6 (`"18"`, `"3.5"`) for ok, a unique `!err:<problem_id>:<index>` otherwise (the executors' error-key prefix);
  `result_text` = `answer = <float>` (or `ERROR`) — a placeholder: the GSM8k executor replaces it
  with LEVER's verifier input (the dict of the program's final local variables) when it re-runs the
  samples file; `correct` = |answer - gold| <= 1e-4; `details.answer` holds the value and
  `details.recorded = true` marks pre-filled executions. When duplicates came from several
  settings, the first setting's recorded answer is used.
- **Re-executing** (LEVER_NOTES): Faithful-CoT programs need their solver's prelude (`import math`,
  `from math import *`, an `lcm` helper, sympy's `Symbol, Eq, simplify, solve` and a `solve_it`
  helper) and a trailing `#` stripped; the answer is `answer`. PoT programs (source `pot_*`) read
  `ans`, rounded to 2 decimals for numpy/sympy values, first element of a list/tuple.

## Statistics (recorded answers; majority ties go to the first source in the order above)

Majority vote counts every raw candidate (before merging) once; random = expected accuracy of
one uniformly drawn raw candidate; per-source accuracy is over all 1,319 problems (a missing row
counts as wrong).

{code002_table}
Without the two PoT files (the 12 Faithful-CoT code-davinci-002 settings only): oracle
{faithful_only[oracle]:.1f}, majority vote {faithful_only[majority_vote]:.1f}, random {faithful_only[random]:.1f},
{faithful_only[distinct_answers_per_problem]:.2f} distinct answers / problem.

Comparison with earlier measurements (LEVER_NOTES, issue text): the default pool matches them
(oracle 93.6, majority 81.7, random 70.2, 14 candidates and 2.76 distinct answers per problem);
the other-LLM pool too (oracle 98.3, majority 89.2, random 66.5). The issue's 12-setting figure
"majority 81.5" was measured parsing answers with `float()` only; parsing recorded fractions
such as `10/3` as numbers (as here, and as the LEVER_NOTES figures do) gives 81.4 (oracle 92.6
either way). The greedy setting `code002_NL+SL` scores 72.3, as Faithful-CoT reports.

{other_table}
"""


if __name__ == "__main__":
    sys.exit(main())
