"""Scale benchmark: ``lever-jax execute --runner beam`` vs the local runner on >= 100,000 programs.

    python scripts/bench_execution.py --runner beam [--programs 100000] [--workers 2] [--json F]

Workload: every candidate of the bundled GSM8k pools (``code002`` and ``other_llms`` samples),
repeated until ``--programs``; repetition ``k`` renames each problem ``<id>-r<k>`` and appends a
comment ``# r<k>`` to every program, so that nothing is deduplicated or cached -- each program is
executed, with the cache off, exactly as many times as the benchmark counts. Both runners run in
this process, one after the other, on the same file, with ``--workers`` parallel sandboxes (local:
one Sandbox of that many workers; Beam: the DirectRunner in multi-processing mode with that many
SDK workers, one one-worker sandbox each). CPU time is user+sys of this process and every reaped
descendant (Beam SDK workers, sandbox workers, task children), so per-program CPU stays
meaningful on a loaded machine; the load average is reported.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

from lever_jax.data import Problem, read_problems, write_problems
from lever_jax.execution import Limits

POOLS = ("code002.samples.jsonl.gz", "other_llms.samples.jsonl.gz")
POOL_OPTIONS = {"convention": "faithful_cot"}  # the bundled pools' conventions (registry.EXECUTOR_OPTIONS)


def cpu_seconds() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def pool_problems() -> list[Problem]:
    from lever_jax.data import bundled_path

    out: list[Problem] = []
    for name in POOLS:  # both pools hold the same GSM8k problems: tag the ids with the pool
        tag = name.split(".")[0]
        out.extend(p.replace(problem_id=f"{p.problem_id}-{tag}") for p in
                   read_problems(bundled_path("gsm8k_pool", name, must_exist=True)))
    return out


def repeated(base: list[Problem], programs: int) -> Iterator[Problem]:
    """Problems whose candidates add up to at least ``programs``, every program text distinct per repetition."""
    total, k = 0, 0
    while total < programs:
        for problem in base:
            if total >= programs:
                return
            cands = tuple(dataclasses.replace(c, program=f"{c.program}\n# r{k}") for c in problem.candidates)
            total += len(cands)
            yield problem.replace(problem_id=f"{problem.problem_id}-r{k}", candidates=cands)
        k += 1


def run_local(samples: str, output: str, workers: int, limits: Limits) -> dict[str, Any]:
    from lever_jax.execution import RunStats, Sandbox, execute_problems, get_executor

    stats = RunStats()
    cpu0, start = cpu_seconds(), time.perf_counter()
    with Sandbox(workers=workers, limits=limits) as sandbox:
        write_problems(output, execute_problems(read_problems(samples), get_executor("gsm8k", POOL_OPTIONS), sandbox, None,
                                                progress=False, stats=stats))
    wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu0
    return {"programs": stats.executed, "wall_s": round(wall, 1), "programs_per_s": round(stats.executed / wall, 1),
            "cpu_ms_per_program": round(cpu / stats.executed * 1e3, 2), "statuses": stats.statuses}


def run_beam(samples: str, output: str, workers: int, limits: Limits) -> dict[str, Any]:
    from lever_jax.execution.beam import execute_file

    cpu0, start = cpu_seconds(), time.perf_counter()
    stats = execute_file(samples, output, "gsm8k", limits, sandbox_workers=1, cache_dir=None,
                         beam_options=[f"--direct_num_workers={workers}"], executor_options=POOL_OPTIONS)
    wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu0
    return {"programs": stats.executed, "wall_s": round(wall, 1), "programs_per_s": round(stats.executed / wall, 1),
            "cpu_ms_per_program": round(cpu / stats.executed * 1e3, 2), "statuses": stats.statuses}


def differing_problems(a: str, b: str) -> int:
    return sum(x != y for x, y in zip(read_problems(a), read_problems(b)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runner", default="beam")
    ap.add_argument("--programs", type=int, default=100_000, help="programs to execute per runner (default 100000)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--json", default=None, help="also write the numbers here")
    args = ap.parse_args(argv)
    report: dict[str, Any] = {"workers": args.workers, "cpus": os.cpu_count(), "load_average_start": os.getloadavg()}
    limits = Limits()
    with tempfile.TemporaryDirectory(prefix="bench_beam_") as tmp:
        samples = os.path.join(tmp, "samples.jsonl.gz")
        count = write_problems(samples, repeated(pool_problems(), args.programs))
        report["problems"] = count
        print(f"workload: {count} problems, >= {args.programs} programs; load {os.getloadavg()}", flush=True)
        report["beam"] = run_beam(samples, os.path.join(tmp, "beam.jsonl.gz"), args.workers, limits)
        print("beam", json.dumps(report["beam"]), f"load {os.getloadavg()}", flush=True)
        report["local"] = run_local(samples, os.path.join(tmp, "local.jsonl.gz"), args.workers, limits)
        print("local", json.dumps(report["local"]), f"load {os.getloadavg()}", flush=True)
        same = Path(tmp, "beam.jsonl.gz").read_bytes() == Path(tmp, "local.jsonl.gz").read_bytes()
        report["byte_identical"] = same
        report["differing_problems"] = 0 if same else differing_problems(os.path.join(tmp, "beam.jsonl.gz"),
                                                                         os.path.join(tmp, "local.jsonl.gz"))
    report["beam_vs_local_throughput"] = round(report["beam"]["programs_per_s"] / report["local"]["programs_per_s"], 3)
    report["load_average_end"] = os.getloadavg()
    print(json.dumps({k: report[k] for k in ("byte_identical", "differing_problems", "beam_vs_local_throughput",
                                             "load_average_start", "load_average_end")}))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
