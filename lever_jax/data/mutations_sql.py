"""Deterministic synthetic SQL candidates: mutations of a gold (or seed) query.

No real LLM samples exist offline for Spider or WikiTQ, so pools that exercise the pipeline are
made by perturbing a reference query. Each candidate's ``source`` is ``"synthetic:<mutation>"``
(the reference itself: ``"synthetic:gold"``, a WikiTQ seed: ``"synthetic:seed_<kind>"``); labels
come from executing the pool (``lever-jax execute``), never from the generator. Such pools are
for testing and demos only -- they never stand in for a real-LLM result.

Mutations (string literals are masked first, so they are never edited by accident):
``agg`` (swap an aggregate: max<->min, avg<->sum, count->sum), ``order`` (flip ASC/DESC),
``limit`` (LIMIT n -> n+1, or drop it), ``op`` (flip a comparison), ``cond_drop`` (drop one
WHERE conjunct or the whole WHERE), ``column`` (replace a selected column by another column of
the schema), ``distinct`` (add or remove DISTINCT), ``join`` (JOIN -> LEFT JOIN, or swap the two
sides of an ON equality), ``literal`` (a number literal + 1), ``group_drop`` (drop GROUP BY).

Usage: ``python -m lever_jax.data.mutations_sql --dataset spider --split dev --out pool.jsonl.gz``,
then ``lever-jax execute`` it, then ``python -m lever_jax.data.mutations_sql --stats executed.jsonl.gz``.
"""
from __future__ import annotations

import argparse
import hashlib
import random
import re
import sqlite3
import sys
from pathlib import Path
from typing import Callable, Sequence

from lever_jax.data.schema import Candidate, Problem

_STRING = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")
_AGG_SWAP = {"max": "min", "min": "max", "avg": "sum", "sum": "avg", "count": "sum"}
_OP_SWAP = {"=": "!=", "!=": "=", "<>": "=", ">": "<", "<": ">", ">=": "<=", "<=": ">="}
_CLAUSE_END = r"(?=\s+(?:GROUP\s+BY|ORDER\s+BY|LIMIT|HAVING|UNION|INTERSECT|EXCEPT)\b|\s*\)|\s*;?\s*$)"


def _mask(sql: str) -> tuple[str, list[str]]:
    literals: list[str] = []

    def repl(m: re.Match) -> str:
        literals.append(m.group(0))
        return f"__lit{len(literals) - 1}__"
    return _STRING.sub(repl, sql), literals


def _unmask(sql: str, literals: list[str]) -> str:
    return re.sub(r"__lit(\d+)__", lambda m: literals[int(m.group(1))], sql)


def _first(pattern: str, sql: str, repl: Callable[[re.Match], str], flags: int = re.I) -> str | None:
    m = re.search(pattern, sql, flags)
    if not m:
        return None
    return sql[:m.start()] + repl(m) + sql[m.end():]


def m_agg(sql: str, rng: random.Random, columns: Sequence[str]) -> str | None:
    return _first(r"\b(max|min|avg|sum|count)\s*\(", sql, lambda m: _AGG_SWAP[m.group(1).lower()] + "(")


def m_order(sql: str, rng: random.Random, columns: Sequence[str]) -> str | None:
    out = _first(r"\b(ASC|DESC)\b", sql, lambda m: "ASC" if m.group(1).upper() == "DESC" else "DESC")
    if out is None and re.search(r"\bORDER\s+BY\b", sql, re.I):
        out = _first(r"(\bORDER\s+BY\s+[^\s,()]+(?:\s*\([^)]*\))?)", sql, lambda m: m.group(1) + " DESC")
    return out


def m_limit(sql: str, rng: random.Random, columns: Sequence[str]) -> str | None:
    m = re.search(r"\bLIMIT\s+(\d+)", sql, re.I)
    if not m:
        return None
    if rng.random() < 0.5:
        return sql[:m.start()].rstrip() + sql[m.end():]
    return sql[:m.start()] + f"LIMIT {int(m.group(1)) + 1}" + sql[m.end():]


def m_op(sql: str, rng: random.Random, columns: Sequence[str]) -> str | None:
    ops = list(re.finditer(r"(?<![<>!=])(>=|<=|!=|<>|=|>|<)(?![<>=])", sql))
    if not ops:
        return None
    m = ops[rng.randrange(len(ops))]
    return sql[:m.start()] + _OP_SWAP[m.group(1)] + sql[m.end():]


def m_cond_drop(sql: str, rng: random.Random, columns: Sequence[str]) -> str | None:
    m = re.search(r"\bWHERE\s+(.+?)" + _CLAUSE_END, sql, re.I | re.S)
    if not m or "select" in m.group(1).lower():
        return None
    parts = re.split(r"\s+AND\s+", m.group(1), flags=re.I)
    if len(parts) == 1:
        return (sql[:m.start()].rstrip() + " " + sql[m.end():].lstrip()).strip()
    del parts[rng.randrange(len(parts))]
    return sql[:m.start(1)] + " AND ".join(parts) + sql[m.end(1):]


def m_column(sql: str, rng: random.Random, columns: Sequence[str]) -> str | None:
    m = re.match(r"\s*SELECT\s+(?:DISTINCT\s+)?(.+?)\s+FROM\b", sql, re.I | re.S)
    if not m or not columns:
        return None
    select = m.group(1)
    idents = [x for x in re.finditer(r"(?<![\w.`\"])(?:(\w+)\.)?`?(\w+)`?(?![\w(])", select)
              if x.group(2).lower() not in {"as", "distinct", "count", "max", "min", "avg", "sum"} and not x.group(2).isdigit()
              and not x.group(2).startswith("__lit")]
    if not idents:
        return None
    x = idents[rng.randrange(len(idents))]
    choices = [c for c in columns if c.lower() != x.group(2).lower()]
    if not choices:
        return None
    new = (x.group(1) + "." if x.group(1) else "") + choices[rng.randrange(len(choices))]
    start = m.start(1) + x.start()
    return sql[:start] + new + sql[m.start(1) + x.end():]


def m_distinct(sql: str, rng: random.Random, columns: Sequence[str]) -> str | None:
    if re.search(r"\bDISTINCT\s+", sql, re.I):
        return re.sub(r"\bDISTINCT\s+", "", sql, count=1, flags=re.I)
    return re.sub(r"^\s*SELECT\s+", "SELECT DISTINCT ", sql, count=1, flags=re.I)


def m_join(sql: str, rng: random.Random, columns: Sequence[str]) -> str | None:
    if rng.random() < 0.5:
        out = _first(r"(?<!LEFT )\bJOIN\b", sql, lambda m: "LEFT JOIN")
        if out is not None:
            return out
    return _first(r"\bON\s+([\w.`\"]+)\s*=\s*([\w.`\"]+)", sql, lambda m: f"ON {m.group(1)} = {m.group(1)}")


def m_literal(sql: str, rng: random.Random, columns: Sequence[str]) -> str | None:
    nums = [m for m in re.finditer(r"(?<![\w.])(\d+)(?![\w.])", sql) if not sql[max(0, m.start() - 6):m.start()].upper().endswith("LIMIT ")]
    if not nums:
        return None
    m = nums[rng.randrange(len(nums))]
    return sql[:m.start()] + str(int(m.group(1)) + 1) + sql[m.end():]


def m_group_drop(sql: str, rng: random.Random, columns: Sequence[str]) -> str | None:
    m = re.search(r"\s+GROUP\s+BY\s+.+?(?=\s+(?:HAVING|ORDER\s+BY|LIMIT|UNION|INTERSECT|EXCEPT)\b|\s*\)|\s*;?\s*$)", sql, re.I | re.S)
    if not m or re.search(r"\bHAVING\b", sql[m.end():], re.I):
        return None
    return sql[:m.start()] + sql[m.end():]


MUTATIONS: dict[str, Callable[[str, random.Random, Sequence[str]], str | None]] = {
    "agg": m_agg, "order": m_order, "limit": m_limit, "op": m_op, "cond_drop": m_cond_drop, "column": m_column,
    "distinct": m_distinct, "join": m_join, "literal": m_literal, "group_drop": m_group_drop,
}


def _rng(key: str) -> random.Random:
    return random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))


def mutate(sql: str, columns: Sequence[str] = (), key: str = "", limit: int | None = None) -> list[tuple[str, str]]:
    """``[(mutation, sql), ...]``: distinct mutants of ``sql`` (never ``sql`` itself), in
    :data:`MUTATIONS` order, deterministic for the same ``key``."""
    masked, literals = _mask(sql.strip())
    rng = _rng(key + "\0" + sql)
    seen = {re.sub(r"\s+", " ", sql.strip()).lower()}
    out: list[tuple[str, str]] = []
    for name, fn in MUTATIONS.items():
        mutated = fn(masked, rng, columns)
        if mutated is None:
            continue
        text = _unmask(re.sub(r"[ \t]{2,}", " ", mutated).strip(), literals)
        norm = re.sub(r"\s+", " ", text).lower()
        if norm in seen:
            continue
        seen.add(norm)
        out.append((name, text))
    if limit is not None and len(out) > limit:
        keep = sorted(rng.sample(range(len(out)), limit))
        out = [out[i] for i in keep]
    return out


def synthetic_candidates(reference: str, columns: Sequence[str], key: str, limit: int | None = 8,
                         reference_source: str = "synthetic:gold") -> tuple[Candidate, ...]:
    """The reference query plus its mutants as candidates (all marked synthetic)."""
    cands = [Candidate(program=reference, source=reference_source)]
    cands += [Candidate(program=sql, source=f"synthetic:{name}") for name, sql in mutate(reference, columns, key, limit)]
    return tuple(cands)


# ----------------------------------------------------------------------------------------------
# Pools per dataset


def spider_pool(problems: Sequence[Problem], limit: int = 8) -> list[Problem]:
    from lever_jax.data.datasets.spider import load_schemas

    schemas = load_schemas()
    out = []
    for p in problems:
        schema = schemas.get(p.context["db_id"], {})
        columns = sorted({c for _, c in schema.get("column_names_original", []) if c != "*"})
        out.append(p.replace(candidates=synthetic_candidates(str(p.gold), columns, p.problem_id, limit)))
    return out


def _loose_key(value: object) -> str:
    """A loose comparison key for seeding (labels come from the real matcher at execution)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = re.sub(r"\s+", " ", str(value)).strip().lower().rstrip(".")
    return text.replace(",", "") if re.fullmatch(r"[+-]?\d{1,3}(,\d{3})+(\.\d+)?", text) else text


def wikitq_seed(table_id: str, targets: Sequence[str], root: Path | None = None) -> tuple[str, str] | None:
    """A query that selects a cell equal to the first target (``select col from main_table where
    id = k``), or ``select count(*) ...`` when the target is an integer not found in the table.
    Cells are compared loosely (case, spaces, thousands separators), not with the evaluator."""
    from lever_jax.data.datasets.wikitq import MAIN_TABLE, ensure_wikitq_db, lever_columns

    if not targets:
        return None
    target = _loose_key(targets[0])
    mapping = lever_columns(table_id)
    conn = sqlite3.connect(f"file:{ensure_wikitq_db(table_id, root)}?mode=ro&immutable=1", uri=True)
    try:
        quoted = ", ".join('"' + src + '"' for src, _ in mapping)
        for row in conn.execute(f"SELECT {quoted} FROM w ORDER BY id"):
            for (src, dst), cell in zip(mapping, row):
                if src in ("id", "agg") or cell is None:
                    continue
                if _loose_key(cell) == target:
                    return "cell", f"select {dst} from {MAIN_TABLE} where id = {row[0]}"
    finally:
        conn.close()
    return ("count", f"select count(*) from {MAIN_TABLE}") if targets[0].strip().isdigit() else None


def wikitq_pool(problems: Sequence[Problem], limit: int = 8, root: Path | None = None) -> list[Problem]:
    from lever_jax.data.datasets.wikitq import lever_columns

    out = []
    for p in problems:
        seed = wikitq_seed(p.context["table_id"], p.gold or [], root)
        if seed is None:
            out.append(p)
            continue
        columns = [dst for _, dst in lever_columns(p.context["table_id"]) if dst not in ("id", "agg")]
        out.append(p.replace(candidates=synthetic_candidates(seed[1], columns, p.problem_id, limit,
                                                             reference_source=f"synthetic:seed_{seed[0]}")))
    return out


def pool_stats(problems: Sequence[Problem]) -> dict[str, float | int]:
    """Counts and accuracies of an *executed* pool: oracle (any candidate correct), majority vote
    (largest group of equal ``result_key``, by count, errored candidates never grouped, ties to the
    first group), random candidate (expected accuracy of one candidate drawn by count)."""
    n = len(problems)
    cands = sum(len(p.candidates) for p in problems)
    oracle = majority = rand = 0.0
    by_source: dict[str, list[int]] = {}
    for p in problems:
        execs = [(c, c.execution) for c in p.candidates if c.execution is not None]
        oracle += any(e.correct for _, e in execs)
        total = sum(c.count for c, _ in execs)
        rand += sum(c.count for c, e in execs if e.correct) / total if total else 0.0
        groups: dict[str, list] = {}
        for c, e in execs:
            if e.status == "ok":
                groups.setdefault(e.result_key, []).append((c, e))
        if groups:
            best = max(groups.values(), key=lambda g: sum(c.count for c, _ in g))
            majority += best[0][1].correct
        for c, e in execs:
            stat = by_source.setdefault(c.source or "?", [0, 0])
            stat[0] += 1
            stat[1] += int(e.correct)
    pct = (lambda x: round(100.0 * x / n, 1)) if n else (lambda x: 0.0)
    return {"problems": n, "candidates": cands, "candidates_per_problem": round(cands / n, 2) if n else 0.0,
            "oracle": pct(oracle), "majority_vote": pct(majority), "random_candidate": pct(rand),
            "correct_rate_by_source": {k: round(100.0 * v[1] / v[0], 1) for k, v in sorted(by_source.items())}}


def main(argv: Sequence[str] | None = None) -> int:
    import json

    from lever_jax.data.datasets import load_problems
    from lever_jax.data.jsonl import read_problems, write_problems

    parser = argparse.ArgumentParser(description="write a synthetic (mutated-SQL) samples file, or --stats of an executed one")
    parser.add_argument("--dataset", choices=("spider", "wikitq"))
    parser.add_argument("--split")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--limit", type=int, default=8, help="mutants per problem")
    parser.add_argument("--max-problems", type=int, default=None)
    parser.add_argument("--stats", type=Path, default=None, help="print pool statistics of an executed file and exit")
    args = parser.parse_args(argv)
    if args.stats:
        print(json.dumps(pool_stats(list(read_problems(args.stats, require_execution=True))), indent=1))
        return 0
    if not (args.dataset and args.split and args.out):
        parser.error("--dataset, --split and --out are required (unless --stats)")
    problems = load_problems(args.dataset, args.split)[: args.max_problems]
    pool = spider_pool(problems, args.limit) if args.dataset == "spider" else wikitq_pool(problems, args.limit)
    n = write_problems(args.out, pool)
    print(f"wrote {n} problems, {sum(len(p.candidates) for p in pool)} synthetic candidates to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
