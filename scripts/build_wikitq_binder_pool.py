"""Build the bundled ``wikitq_binder`` pool: real LLM samples (Binder programs) on WikiTQ test.

Reads (``--src`` = the shared ``data/wikitq`` folder):
  binder_samples/binder_program_wikitq_test_samples.json.gz      eid -> generations + ori_data_item
  binder_samples/binder_program_wikitq_test_exec_answers.json.gz  eid -> recorded exec_answers
  data/pristine-unseen-tables.tsv.gz, tagged/pristine-unseen-tables.tagged.gz (gold cross-check,
  CoreNLP canonical targets for the official evaluator)
and writes lever_jax/data/bundled/wikitq_binder/:
  binder.samples.jsonl.gz   one problem per question that has samples (data contract)
  recorded_answers.jsonl.gz per problem, Binder's recorded execution answer of each candidate
  tables.json.gz            the tables as Binder read them ({table_id: {header, rows, page_title}})
  tables.tar.xz             Binder's table ``w`` of each, ``<table_id>.db`` (built from tables.json.gz)
  stats.json                the counts quoted in DATA_CARD.md, and the licence files.

Candidates: programs are merged on ``str.strip()`` (leading spaces are a tokenisation artefact:
`` SELECT`` and ``SELECT`` are different token sequences for the same program). ``count`` = raw
samples merged. Each *distinct raw text* keeps one log-prob, the highest of its draws (repeated
draws of one text mostly record the same sum, but not always: stats.json counts them); a merged program's ``gen_logprob`` is the
logsumexp over its distinct raw texts (the probability that the LLM writes this program, in any of
the surface forms seen). ``num_tokens`` (none recorded) = cl100k_base token count of the most
probable raw text (the gpt-3.5 tokenizer, via the PyPI ``bpe-openai``), an approximation.
Deterministic: the same inputs give byte-identical files.

    python scripts/build_wikitq_binder_pool.py --src /path/to/shared/data/wikitq
    python scripts/build_wikitq_binder_pool.py --tables-only   # rebuild tables.tar.xz from tables.json.gz
"""
from __future__ import annotations

import argparse
import ast
import collections
import gzip
import io
import json
import lzma
import math
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from lever_jax.data import Candidate, Problem, jsonl
from lever_jax.data.binder_tables import write_binder_db
from lever_jax.data.datasets.wikitq_binder import table_id_from_context
from lever_jax.execution.binder_sql import has_neural_call
from lever_jax.execution.wikitq_match import tsv_unescape_list

ROOT = Path(__file__).resolve().parents[1]

OUT = ROOT / "lever_jax" / "data" / "bundled" / "wikitq_binder"
SOURCE_TAG = "binder:gpt-3.5_t0.4"
SAMPLES = "binder_samples/binder_program_wikitq_test_samples.json.gz"
EXEC = "binder_samples/binder_program_wikitq_test_exec_answers.json.gz"
LICENCES = {"binder_samples/LICENSE.Binder-TableQA-MIT": "LICENSE.Binder-TableQA-MIT",
            "LICENSE": "LICENSE.WikiTableQuestions-CC-BY-SA-4.0"}


def fail(message: str) -> None:
    print(f"build_wikitq_binder_pool: {message}", file=sys.stderr)
    raise SystemExit(2)


def read_json_gz(path: Path) -> Any:
    if not path.exists():
        fail(f"{path}: no such file")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def read_tsv(path: Path) -> dict[str, dict[str, str]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        header = handle.readline().rstrip("\n").split("\t")
        return {row[0]: dict(zip(header, row)) for row in (line.rstrip("\n").split("\t") for line in handle)}


def gold_list(answer_text: Any, eid: str) -> list[str]:
    """``answer_text``: a list of strings, or its Python-literal string."""
    value = ast.literal_eval(answer_text) if isinstance(answer_text, str) else answer_text
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        fail(f"{SAMPLES}: eid {eid}: field 'ori_data_item.answer_text': expected a list of strings, got {answer_text!r:.80}")
    return value


def logsumexp(values: list[float]) -> float:
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


def merge_generations(generations: list[list[Any]], encoder: Any, stats: collections.Counter) -> list[Candidate]:
    """Candidates from ``[[text, sum_logprob], ...]`` (see the module docstring)."""
    groups: dict[str, dict[str, Any]] = {}
    for text, logprob in generations:
        group = groups.setdefault(text.strip(), {"count": 0, "raw": {}})
        group["count"] += 1
        if text in group["raw"]:
            spread = abs(group["raw"][text] - float(logprob))
            stats["repeated_raw_text"] += 1
            stats["repeated_raw_text_same_logprob"] += spread == 0.0
            stats["repeated_raw_text_logprob_within_0.01"] += spread <= 0.01
            stats["max_logprob_spread_x1e6"] = max(stats["max_logprob_spread_x1e6"], round(spread * 1e6))
            group["raw"][text] = max(group["raw"][text], float(logprob))
        else:
            group["raw"][text] = float(logprob)
    out = []
    for program, group in groups.items():
        raw = group["raw"]
        if len(raw) > 1:
            stats["programs_with_several_surface_forms"] += 1
        best = max(raw, key=lambda t: raw[t])
        out.append(Candidate(program=program, gen_logprob=logsumexp(list(raw.values())),
                             num_tokens=len(encoder.encode(best)), count=group["count"], source=SOURCE_TAG))
    return out


def write_tar_xz(path: Path, members: dict[str, bytes]) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in sorted(members):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode, info.uid, info.gid = len(members[name]), 0, 0o444, 0, 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(members[name]))
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(lzma.compress(buf.getvalue(), preset=9 | lzma.PRESET_EXTREME))
    tmp.replace(path)


def build_tables(tables: dict[str, dict[str, Any]], out: Path) -> None:
    """tables.tar.xz: Binder's ``w`` of every table (needs the ``wikitq-build`` extra)."""
    with tempfile.TemporaryDirectory() as tmp:
        members = {}
        for table_id in sorted(tables):
            path = write_binder_db(tables[table_id], Path(tmp) / f"{table_id}.db")
            members[path.name] = path.read_bytes()
    write_tar_xz(out / "tables.tar.xz", members)


def build(src: Path, out: Path) -> dict[str, Any]:
    import bpe_openai  # the wikitq-build extra: the cl100k_base vocabulary ships inside it

    encoder = bpe_openai.get_encoding("cl100k_base")
    samples, executed = read_json_gz(src / SAMPLES), read_json_gz(src / EXEC)
    test = read_tsv(src / "data" / "pristine-unseen-tables.tsv.gz")
    tagged = read_tsv(src / "tagged" / "pristine-unseen-tables.tagged.gz")
    stats: collections.Counter = collections.Counter()
    problems, recorded, tables, skipped, checks = [], [], {}, [], []
    for eid in sorted(samples, key=int):
        item = samples[eid]["ori_data_item"]
        pid, question, gold = item["id"], item["question"], gold_list(item["answer_text"], eid)
        table_id = table_id_from_context(item["table_id"])
        row = test.get(pid)
        if row is None:
            fail(f"{SAMPLES}: eid {eid}: id {pid!r} is not in the WikiTQ test file")
        if row["utterance"] != question or tsv_unescape_list(row["targetValue"]) != gold or row["context"] != item["table_id"]:
            checks.append(pid)
        table = {"header": item["table"]["header"], "rows": item["table"]["rows"], "page_title": item["table"]["page_title"]}
        if tables.setdefault(table_id, table) != table:
            fail(f"{SAMPLES}: eid {eid}: table {table_id} differs from an earlier copy")
        generations = samples[eid]["generations"]
        if not generations:
            skipped.append(pid)
            continue
        stats["samples"] += len(generations)
        stats["neural_samples"] += sum(has_neural_call(g[0]) for g in generations)
        candidates = merge_generations(generations, encoder, stats)
        context = {"table_id": table_id, "page_title": table["page_title"],
                   "target_canon": tsv_unescape_list(tagged[pid]["targetCanon"]), "binder_eid": eid}
        problems.append(Problem(problem_id=pid, dataset="wikitq_binder", question=question, context=context,
                                gold=gold, candidates=tuple(candidates)))
        answers = {}  # stripped program -> the recorded answers of its raw samples, in order
        for (text, _), answer in zip(executed[eid]["nsqls"], executed[eid]["exec_answers"]):
            answers.setdefault(text.strip(), []).append(answer)
        recorded.append({"problem_id": pid, "answers": [answers[c.program] for c in candidates]})
    stats.update(problems=len(problems), questions=len(samples), tables=len(tables),
                 candidates=sum(len(p.candidates) for p in problems),
                 neural_candidates=sum(has_neural_call(c.program) for p in problems for c in p.candidates),
                 gold_mismatches_with_test_file=len(checks))
    out.mkdir(parents=True, exist_ok=True)
    jsonl.write_problems(out / "binder.samples.jsonl.gz", problems)
    jsonl.write_json_lines(out / "recorded_answers.jsonl.gz", recorded)
    with jsonl.atomic_writer(out / "tables.json.gz") as handle:
        json.dump({"tables": tables}, handle, ensure_ascii=False, sort_keys=True)
    build_tables(tables, out)
    for name, target in LICENCES.items():
        shutil.copyfile(src / name, out / target)
    report = {**dict(sorted(stats.items())), "questions_without_samples": skipped, "gold_mismatch_ids": checks}
    jsonl.write_json(out / "stats.json", report)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--src", type=Path, help="the shared data/wikitq folder")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--tables-only", action="store_true", help="rebuild tables.tar.xz from the bundled tables.json.gz")
    args = parser.parse_args(argv)
    if args.tables_only:
        with jsonl.open_text(args.out / "tables.json.gz") as handle:
            build_tables(json.load(handle)["tables"], args.out)
        return 0
    if args.src is None:
        parser.error("--src is required (unless --tables-only)")
    try:
        report = build(args.src, args.out)
    except (KeyError, TypeError, ValueError) as err:  # a source file that is not laid out as expected
        fail(f"{args.src}: unexpected source layout ({type(err).__name__}: {err}); see binder_samples/SOURCE.md")
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
