"""Few-shot prompts in LEVER's formats, so users can sample new candidate pools with any LLM.

Reproduces the prompt construction of LEVER's few-shot readers (niansong1996/lever, NLP4Code) from
the bundled exemplar files:

- GSM8k: LEVER's prompt file ``cot_code_mwp_prompt_idiomatic_code_gsm.txt`` (8 ``## question`` +
  idiomatic-code exemplars) + ``"\\n\\n## " + question``; the model writes code ending in
  ``answer = ...``; stop ``"\\n\\n"`` (LEVER keeps the text before the first blank line).
- MBPP: ``"# Write Python function to complete the task and pass the assertion tests. \\n\\n"`` +
  demonstrations of tasks 2, 3, 4 (``### Task Start ###`` / assertion header / ``\"\"\" text \"\"\"`` /
  code / ``### Task End ###``) + the target's header; stop ``"### Task End ###"``. Defaults
  ``add_assertion_n=1, test_input_only=True`` follow LEVER's verification-data run name
  (``...pass_at_100-1_test_input_only``): one test call (without its expected value) is shown.
- Spider / WikiTQ: ``-- Example:``-separated demonstrations
  ``-- Database <db>:\\n--  Table <t>: c1, c2\\n-- Question: <q>\\n-- SQL:\\n<sql>``; stop ``"\\n\\n"``.
  The target's table headers come from the SQL loaders' bundles (Spider ``tables.json`` original
  names; WikiTQ's ``main_table`` columns ``id, agg, <renamed SQUALL columns>``), or are passed in.
  LEVER's final Spider prompts also show one example value per column (from its ``db_info``
  files, not released here); this builder uses the exemplar files' plain headers.
- HumanEval (not in LEVER): zero-shot, the prompt itself; stop sequences as CodeT.

``lever-jax prompts`` writes one ``{"problem_id", "dataset", "prompt", "stop"}`` per line.
"""
from __future__ import annotations

import ast
import functools
import gzip
import json
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from lever_jax.data.bundled import bundled_path
from lever_jax.data.schema import Problem

STOP_SEQUENCES: dict[str, tuple[str, ...]] = {
    "gsm8k": ("\n\n",),
    "mbpp": ("### Task End ###",),
    "humaneval": ("\nclass", "\ndef", "\n#", "\nif", "\nprint"),
    "spider": ("\n\n",),
    "wikitq": ("\n\n",),
}
EXEMPLAR_FILES = {
    "gsm8k": ("gsm8k", "prompts", "cot_code_mwp_prompt_idiomatic_code_gsm.txt.gz"),
    "mbpp": ("mbpp", "prompts", "mbpp-official_first_3-10_exemplars.jsonl.gz"),
    "spider": ("prompts", "spider", "spider-8_exemplars.jsonl.gz"),
    "wikitq": ("prompts", "wikitq", "wtq-8_exemplars.jsonl.gz"),
}
MBPP_TASK_DESCRIPTION = "# Write Python function to complete the task and pass the assertion tests. \n\n"
MBPP_PROMPT_TASKS = (2, 3, 4)  # LEVER: "according to the original repo, we use the task id 2, 3, 4"
SQL_HEADER = "-- Translate natural language questions into SQL queries."  # ours: LEVER's file header is not released

TableHeaders = Mapping[str, Sequence[str]]


def _read_bundled_text(*parts: str) -> str:
    with gzip.open(bundled_path(*parts, must_exist=True), "rt", encoding="utf-8") as fh:
        return fh.read()


@functools.lru_cache(maxsize=None)
def exemplars(dataset: str) -> tuple[dict[str, Any], ...]:
    """The bundled exemplar records of ``dataset`` (JSONL files only)."""
    text = _read_bundled_text(*EXEMPLAR_FILES[dataset])
    return tuple(json.loads(line) for line in text.splitlines() if line.strip())


# ----------------------------------------------------------------------------------------------
# GSM8k


@functools.lru_cache(maxsize=1)
def _gsm8k_prefix() -> str:
    return _read_bundled_text(*EXEMPLAR_FILES["gsm8k"])


def gsm8k_prompt(question: str) -> str:
    return _gsm8k_prefix() + "\n\n## " + question


# ----------------------------------------------------------------------------------------------
# MBPP


def assertion_to_call(assertion: str) -> str:
    """``assert f(x) == y`` -> ``f(x)`` (LEVER's ``assertion_to_test``); ValueError otherwise."""
    try:
        tree = ast.parse(assertion.strip())
    except SyntaxError as err:
        raise ValueError(f"not a Python assert statement: {assertion!r}") from err
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assert):
        raise ValueError(f"not a single assert statement: {assertion!r}")
    test = tree.body[0].test
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        raise ValueError(f"assert is not a single comparison: {assertion!r}")
    call = test.left
    if not isinstance(call, ast.Call):
        raise ValueError(f"left side of the comparison is not a call: {assertion!r}")
    segment = ast.get_source_segment(assertion.strip(), call)
    return (segment or ast.unparse(call)).strip()


def mbpp_demonstration(text: str, tests: Sequence[str], code: str | None, add_assertion_n: int = 1,
                       test_input_only: bool = True) -> str:
    """One ``### Task Start ###`` block; ``code=None`` leaves it open for the model."""
    if test_input_only:
        header = "# These are the calls for your function:\n"
        header += "".join(assertion_to_call(t) + "\n" for t in tests[:add_assertion_n])
    else:
        header = "# These are the assertions for your function:\n"
        header += "".join(t + "\n" for t in tests[:add_assertion_n])
    comment = f'""" {text} """'
    header = header + "\n" + comment if add_assertion_n > 0 else comment
    if code is None:
        return f"### Task Start ###\n{header}"
    return f"### Task Start ###\n{header}\n{code}\n### Task End ###"


def mbpp_prompt(problem: Problem, add_assertion_n: int = 1, test_input_only: bool = True) -> str:
    by_id = {int(e["task_id"]): e for e in exemplars("mbpp")}
    demos = [
        mbpp_demonstration(by_id[t]["text"], by_id[t]["test_list"], by_id[t]["code"].replace("\r\n", "\n"),
                           add_assertion_n, test_input_only)
        for t in MBPP_PROMPT_TASKS
    ]
    target = mbpp_demonstration(problem.question, list(problem.context.get("test_list", [])), None,
                                add_assertion_n, test_input_only)
    return MBPP_TASK_DESCRIPTION + "\n\n".join(demos) + "\n\n" + target


# ----------------------------------------------------------------------------------------------
# Spider / WikiTQ


def sql_demonstration(db_id: str, question: str, table_headers: TableHeaders, sql: str | None) -> str:
    text = f"-- Database {db_id}:\n"
    for table, columns in table_headers.items():
        text += f"--  Table {table}: {', '.join(columns)}\n"
    text += f"-- Question: {question}\n-- SQL:\n"
    return text + (sql if sql is not None else "")


def _exemplar_headers(record: Mapping[str, Any]) -> TableHeaders:
    headers = record["db_table_headers"]
    if isinstance(headers, str):  # the WikiTQ file stores a Python dict repr
        headers = ast.literal_eval(headers)
    return headers


def sql_prompt(dataset: str, question: str, db_id: str, table_headers: TableHeaders) -> str:
    demos = [sql_demonstration(e["db_id"], e["question"], _exemplar_headers(e), e["query"]) for e in exemplars(dataset)]
    parts = [SQL_HEADER] + demos + [sql_demonstration(db_id, question, table_headers, None).strip()]
    return "\n\n-- Example:\n\n".join(parts)


def spider_table_headers(db_id: str) -> TableHeaders:
    """``{table: [columns]}`` with Spider's original names, from the bundled ``tables.json``."""
    from lever_jax.data.datasets import spider

    schema = spider.load_schemas()[db_id]
    headers: dict[str, list[str]] = {t: [] for t in schema["table_names_original"]}
    tables = list(schema["table_names_original"])
    for table_index, column in schema["column_names_original"]:
        if table_index >= 0:
            headers[tables[table_index]].append(column)
    return headers


def wikitq_table_headers(table_id: str) -> TableHeaders:
    """``{"main_table": [id, agg, <renamed SQUALL columns>...]}`` (LEVER's WikiTQ table view)."""
    from lever_jax.data.datasets import wikitq

    return {"main_table": [lever for _squall, lever in wikitq.lever_columns(table_id)]}


def _sql_headers_lookup(dataset: str) -> Callable[[str], TableHeaders]:
    """The table-header lookup of a SQL dataset (schemas from the SQL data loaders' bundles)."""
    from lever_jax.data.datasets import dataset_module

    custom = getattr(dataset_module(dataset), "table_headers", None)
    if custom is not None:
        return custom
    return spider_table_headers if dataset == "spider" else wikitq_table_headers


# ----------------------------------------------------------------------------------------------
# Dispatch


def build_prompt(problem: Problem, table_headers: Callable[[str], TableHeaders] | None = None, **options: Any) -> str:
    """The LEVER-style few-shot prompt for one problem (no candidates needed)."""
    if problem.dataset == "gsm8k":
        return gsm8k_prompt(problem.question)
    if problem.dataset == "mbpp":
        return mbpp_prompt(problem, **options)
    if problem.dataset == "humaneval":
        return str(problem.context["prompt"])
    if problem.dataset in ("spider", "wikitq"):
        key = "db_id" if problem.dataset == "spider" else "table_id"
        db_id = str(problem.context[key])
        lookup = table_headers or _sql_headers_lookup(problem.dataset)
        return sql_prompt(problem.dataset, problem.question, db_id, lookup(db_id))
    raise ValueError(f"no prompt format for dataset {problem.dataset!r}")


def prompt_records(problems: Iterable[Problem], table_headers: Callable[[str], TableHeaders] | None = None,
                   **options: Any) -> Iterator[dict[str, Any]]:
    """``{"problem_id", "dataset", "prompt", "stop"}`` per problem (what ``lever-jax prompts`` writes)."""
    for problem in problems:
        yield {
            "problem_id": problem.problem_id,
            "dataset": problem.dataset,
            "prompt": build_prompt(problem, table_headers, **options),
            "stop": list(STOP_SEQUENCES[problem.dataset]),
        }
