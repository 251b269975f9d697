"""Execution throughput: our sandbox vs a LEVER-style executor vs in-process exec (the floor).

    python scripts/bench_execution.py [--gsm8k 1000] [--mbpp 300] [--lever 150] [--workers 2]
    python scripts/bench_execution.py --runner beam [--programs 100000]   # scripts/bench_execution_beam.py

Workloads (from the bundled data; a small inline fixture only if the data is absent):
  * GSM8k: candidate programs of the bundled code-davinci-002 pool (first problems, in order);
  * MBPP: the gold solutions of all 974 tasks (first ``--mbpp``) with their three asserts.
Programs that hit the timeout in a pre-pass are left out of every mode, so the numbers measure
per-program cost, not the 10-second timeout.

Modes (all measured in this run, on the same programs):
  * ``sandbox``: :class:`lever_jax.execution.sandbox.Sandbox` with ``--workers`` workers, through
    the real executors (make_task -> sandbox -> to_execution, the judge included in the timing),
    every worker's zygotes started before timing (the pool modes are warmed too);
  * ``sandbox_cold``: the same with the zygotes started as tasks arrive (what a fresh
    ``lever-jax execute`` pays: sympy's zygote imports ~0.85 s in each worker that gets a sympy task);
  * ``sandbox_round1``: the same with the mount view, PID and IPC namespaces disabled (what the
    layers added in issue 12 cost, measured in the same run);
  * ``lever_style``: as LEVER's code: a ``concurrent.futures`` process pool of ``--workers``
    processes, each call wrapped in a func_timeout-style thread with a 10 s timeout, and every
    ``execute()`` starting a ``multiprocessing.Manager`` and a ``Process`` (LEVER's
    safe_execution_util); MBPP runs the program with its asserts once and then once per test
    call (LEVER's tracing); run on the first ``--lever`` programs only (it is slow);
  * ``pool_thread``: the same process pool + timeout thread but exec directly in the pool worker
    (no per-program process: the cheapest thing LEVER's structure allows, no isolation at all);
  * ``floor``: plain in-process ``exec`` of the same task functions, one process, no isolation.

Per-program overhead over the floor: ``1/rate - 1/floor_rate`` (wall clock, all workers),
``workers/rate - 1/floor_rate`` (per core), and CPU time (user+sys of every sandbox process, from
``getrusage``; a session with no timed tasks is subtracted) per program minus the floor's --
the CPU figure is the one that stays meaningful on a shared, loaded machine.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import multiprocessing
import os
import platform
import resource
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

from lever_jax.data import Candidate, Problem
from lever_jax.execution import Limits, Sandbox, Task, get_executor

TIMEOUT_S = 10.0


# -- workloads --------------------------------------------------------------------------------------
def gsm8k_workload(n: int) -> list[tuple[Problem, Candidate]]:
    from lever_jax.data import bundled_path, read_problems

    try:
        path = bundled_path("gsm8k_pool", "code002.samples.jsonl.gz", must_exist=True)
    except (FileNotFoundError, TypeError):
        path = None
    pairs: list[tuple[Problem, Candidate]] = []
    if path is None:  # fixture: bundled pool absent
        problem = Problem("fixture", "gsm8k", "q", {}, 18.0, ())
        progs = ["eggs = 16 - 3 - 4\nanswer = eggs * 2", "def solution():\n    return 9 * 2", "answer = 17"]
        return [(problem, Candidate(progs[i % 3])) for i in range(n)]
    for problem in read_problems(path):
        for cand in problem.candidates:
            pairs.append((problem, cand))
            if len(pairs) >= n:
                return pairs
    return pairs


def mbpp_workload(n: int) -> list[tuple[Problem, Candidate]]:
    try:
        from lever_jax.data import gold_program, load_problems

        problems = load_problems("mbpp", "all")
    except (FileNotFoundError, ValueError, OSError, ImportError):
        ctx = {"test_list": ["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(0, 0) == 0"],
               "test_setup_code": "", "challenge_test_list": []}
        problem = Problem("fixture", "mbpp", "q", ctx, "def add(a, b):\n    return a + b", ())
        return [(problem, Candidate(problem.gold))] * n
    return [(p, Candidate(gold_program("mbpp", p))) for p in problems[:n]]


# -- LEVER-style executor (re-implemented from LEVER's public code structure) -------------------
def _lever_unsafe_execute(code: str, result: Any, output_locals: bool) -> None:
    globals_: dict[str, Any] = {}
    locals_: dict[str, Any] = {}
    try:
        if output_locals:
            exec(code, globals_, locals_)  # noqa: S102 - benchmark of trusted data
            result["locals"] = {k: {"type": str(type(v)), "str_value": str(v)} for k, v in locals_.items()}
        else:
            exec(code, globals_)  # noqa: S102
        result["result"] = "passed"
    except AssertionError:
        result["result"] = "failed: assertion error"
    except BaseException as err:  # noqa: BLE001
        result["result"] = f"failed: {err}"


def _lever_execute(code: str, output_locals: bool = False, timeout: float = TIMEOUT_S) -> dict[str, Any]:
    manager = multiprocessing.Manager()
    try:
        result = manager.dict()
        proc = multiprocessing.Process(target=_lever_unsafe_execute, args=(code, result, output_locals))
        proc.start()
        proc.join(timeout=timeout + 1)
        if proc.is_alive():
            proc.kill()
        out = dict(result) or {"result": "timed out"}
    finally:
        manager.shutdown()
    return out


def _with_thread_timeout(fn: Callable[..., Any], *args: Any) -> Any:
    """func_timeout-style: run in a thread, give up after TIMEOUT_S."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as err:  # noqa: BLE001
            box["value"] = ("error", repr(err))

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(TIMEOUT_S)
    return box.get("value", ("timeout", None))


GSM8K_PRELUDE = "import math\nfrom math import *\ndef lcm(a, b):\n    return (a * b) // math.gcd(a, b)\n"
SYMPY_PRELUDE = ("from sympy import Symbol, Eq, simplify, solve\n"
                 "def solve_it(equation, variable):\n    s = solve(equation, variable, dict=True)\n"
                 "    return s[0] if s else {variable: None}\n")


def _gsm8k_code(program: str) -> str:
    uses_sympy = any(w in program for w in ("Symbol", "solve", "Eq(", "simplify", "sympy"))
    return GSM8K_PRELUDE + (SYMPY_PRELUDE if uses_sympy else "") + program


def _lever_gsm8k(program: str) -> Any:
    return _with_thread_timeout(lambda: _lever_execute(_gsm8k_code(program), output_locals=True))


def _lever_mbpp(program: str, setup: str, tests: list[str]) -> Any:
    from lever_jax.execution.python_tests import split_assert

    def real() -> Any:
        whole = _lever_execute(program + "\n\n" + setup + "\n\n" + "\n".join(tests))
        traces = []
        for test in tests:
            parts = split_assert(test)
            call = parts[0] if parts else "None"
            traces.append(_lever_execute(program + "\n\n" + setup + "\n\n" + f"_return_val = {call}"))
        return whole, traces

    return _with_thread_timeout(real)


def _pool_thread_gsm8k(program: str) -> Any:
    def real() -> Any:
        ns: dict[str, Any] = {}
        exec(_gsm8k_code(program), ns)  # noqa: S102
        return str(ns.get("answer"))

    return _with_thread_timeout(real)


def _pool_thread_mbpp(program: str, setup: str, tests: list[str]) -> Any:
    def real() -> Any:
        ns: dict[str, Any] = {}
        exec(program + "\n\n" + setup + "\n\n" + "\n".join(tests), ns)  # noqa: S102
        return "passed"

    return _with_thread_timeout(real)


# -- modes ---------------------------------------------------------------------------------------------
def cpu_seconds() -> float:
    """CPU of this process plus every reaped descendant (workers, zygotes, task children)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


ROUND1_LAYERS = ("mount_view", "pid_namespace", "ipc_namespace")  # issue-12 layers, off in "sandbox_round1"
# The bundled GSM8k pool's own conventions (the workload BENCHMARKS.md measured), not LEVER's default.
EXECUTOR_OPTIONS = {"gsm8k": {"convention": "faithful_cot"}}


def run_sandbox(dataset: str, pairs: list[tuple[Problem, Candidate]], workers: int, timed: bool = True,
                disable: tuple[str, ...] = (), warm: bool = True) -> tuple[float, list[str], float]:
    """(wall seconds of the timed map + judging, statuses, CPU seconds of the whole session incl.
    start-up). ``to_execution`` (the judge, in this process) is inside the timed part. ``warm``:
    every worker starts its zygotes before timing; else they start when their first task comes."""
    executor = get_executor(dataset, EXECUTOR_OPTIONS.get(dataset))
    tasks = [executor.make_task(p, c) for p, c in pairs]
    cpu0 = cpu_seconds()
    # Every worker starts the zygotes of the workload's task modules before timing (as the pool
    # modes are warmed): the steady state of a long run, not sympy's ~0.85 s of imports per worker.
    preload = sorted({task.function for task in tasks}) if warm else []
    with Sandbox(workers=workers, limits=Limits(timeout_s=TIMEOUT_S), preload=preload,
                 **({"disable": disable} if disable else {})) as sandbox:
        if warm:
            list(sandbox.map(tasks[: 4 * workers]))
        start = time.perf_counter()
        results = list(sandbox.map(tasks if timed else []))
        statuses = [executor.to_execution(p, c, r).status for (p, c), r in zip(pairs, results)]
        elapsed = time.perf_counter() - start
    cpu = cpu_seconds() - cpu0
    return elapsed, statuses, cpu


def fork_exit_ms(count: int = 300) -> float:
    """Median wall ms of fork + ``os._exit`` + ``waitpid`` of this process (GSM8k's task module
    imported, heap frozen as a zygote's): the floor of any one-process-per-program design, whatever
    the isolation layers cost on top."""
    import gc

    import lever_jax.execution.python_gsm8k  # noqa: F401 - what the plain zygote has imported

    gc.collect()
    gc.freeze()
    times = []
    for _ in range(count):
        start = time.perf_counter()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            os._exit(0)
        os.waitpid(pid, 0)
        times.append(time.perf_counter() - start)
    gc.unfreeze()
    return sorted(times)[count // 2] * 1e3


def _floor_timeout(signum: int, frame: Any) -> None:
    raise TimeoutError


def run_floor(dataset: str, pairs: list[tuple[Problem, Candidate]]) -> tuple[float, float]:
    executor = get_executor(dataset, EXECUTOR_OPTIONS.get(dataset))
    tasks: list[Task] = [executor.make_task(p, c) for p, c in pairs]
    functions: dict[str, Callable[[Any], Any]] = {}
    for task in tasks:
        module, _, name = task.function.partition(":")
        functions[task.function] = getattr(__import__(module, fromlist=[name]), name)
    old = signal.signal(signal.SIGALRM, _floor_timeout)
    cpu0 = cpu_seconds()
    start = time.perf_counter()
    for task in tasks:
        signal.setitimer(signal.ITIMER_REAL, TIMEOUT_S)
        try:
            functions[task.function](task.payload)
        except BaseException:  # noqa: BLE001 - programs fail; the floor only times them
            pass
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    elapsed = time.perf_counter() - start
    cpu = cpu_seconds() - cpu0
    signal.signal(signal.SIGALRM, old)
    return elapsed, cpu


def run_pool(kind: str, dataset: str, pairs: list[tuple[Problem, Candidate]], workers: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the pool and its children incl. start-up minus a warm-up-only session)."""
    cpu0 = cpu_seconds()
    _run_pool(kind, dataset, pairs, workers, timed=False)
    cpu_empty = cpu_seconds() - cpu0
    cpu0 = cpu_seconds()
    elapsed = _run_pool(kind, dataset, pairs, workers, timed=True)
    return elapsed, cpu_seconds() - cpu0 - cpu_empty


def _run_pool(kind: str, dataset: str, pairs: list[tuple[Problem, Candidate]], workers: int, timed: bool) -> float:
    if dataset == "gsm8k":
        fn = _lever_gsm8k if kind == "lever_style" else _pool_thread_gsm8k
        args = [(c.program,) for _, c in pairs]
    else:
        fn = _lever_mbpp if kind == "lever_style" else _pool_thread_mbpp
        args = [(c.program, str(p.context.get("test_setup_code") or ""), list(p.context["test_list"])) for p, c in pairs]
    with concurrent.futures.ProcessPoolExecutor(workers) as pool:
        list(pool.map(fn, *zip(*args[: 2 * workers])))  # warm the pool
        start = time.perf_counter()
        if timed:
            list(pool.map(fn, *zip(*args)))
        return time.perf_counter() - start


def main() -> int:
    if "--runner" in sys.argv or any(a.startswith("--runner=") for a in sys.argv):  # Beam vs local at scale
        from bench_execution_beam import main as beam_main  # the sibling script

        return beam_main(sys.argv[1:])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gsm8k", type=int, default=1000, help="GSM8k programs (default 1000)")
    ap.add_argument("--mbpp", type=int, default=300, help="MBPP gold programs (default 300)")
    ap.add_argument("--lever", type=int, default=10 ** 9, help="cap on programs for the slow LEVER-style mode "
                    "(default: all, so that every mode runs the same programs)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--json", default=None, help="also write the numbers here")
    args = ap.parse_args()
    fork_ms = round(fork_exit_ms(), 2)  # before sympy is imported here: the size of the plain zygote
    import sympy  # noqa: F401 - the floor gets sympy pre-imported, like the sandbox's sympy zygote

    report: dict[str, Any] = {"workers": args.workers, "cpus": os.cpu_count(), "python": platform.python_version(),
                              "load_average_start": os.getloadavg(), "fork_exit_ms": fork_ms}
    rows = []
    from lever_jax.execution.python_gsm8k import _SYMPY_NAMES

    gsm_pairs = gsm8k_workload(args.gsm8k)
    workloads = [
        ("gsm8k", "gsm8k", gsm_pairs),
        ("gsm8k (no sympy)", "gsm8k", [(p, c) for p, c in gsm_pairs if not _SYMPY_NAMES.search(c.program)]),
        ("mbpp", "mbpp", mbpp_workload(args.mbpp)),
    ]
    for label, dataset, pairs in workloads:
        _, statuses, _ = run_sandbox(dataset, pairs, args.workers)  # pre-pass: drop programs that time out
        kept = [pair for pair, status in zip(pairs, statuses) if status != "timeout"]
        n, n_lever = len(kept), min(len(kept), args.lever)
        t_sandbox, _, cpu_full = run_sandbox(dataset, kept, args.workers)
        _, _, cpu_empty = run_sandbox(dataset, kept, args.workers, timed=False)
        t_sandbox1, _, _ = run_sandbox(dataset, kept, 1)
        t_cold, _, _ = run_sandbox(dataset, kept, args.workers, warm=False)
        t_round1, _, cpu_round1 = run_sandbox(dataset, kept, args.workers, disable=ROUND1_LAYERS)
        t_floor, cpu_floor = run_floor(dataset, kept)
        t_pool, cpu_pool = run_pool("pool_thread", dataset, kept, args.workers)
        t_lever, cpu_lever = run_pool("lever_style", dataset, kept[:n_lever], args.workers)
        rates = {"sandbox": n / t_sandbox, "sandbox_1_worker": n / t_sandbox1, "sandbox_round1": n / t_round1,
                 "sandbox_cold": n / t_cold,
                 "floor": n / t_floor,
                 "pool_thread": n / t_pool, "lever_style": n_lever / t_lever}
        entry = {
            "dataset": label, "programs": n, "dropped_timeouts": len(pairs) - n, "lever_style_programs": n_lever,
            "programs_per_s": {k: round(v, 1) for k, v in rates.items()},
            "speedup_vs_lever_style": round(rates["sandbox"] / rates["lever_style"], 1),
            "speedup_cold_vs_lever_style": round(rates["sandbox_cold"] / rates["lever_style"], 1),
            "speedup_vs_pool_thread": round(rates["sandbox"] / rates["pool_thread"], 2),
            "overhead_ms_wall": round((1 / rates["sandbox"] - 1 / rates["floor"]) * 1e3, 2),
            "overhead_ms_per_core": round((args.workers / rates["sandbox"] - 1 / rates["floor"]) * 1e3, 2),
            "overhead_ms_1_worker": round((1 / rates["sandbox_1_worker"] - 1 / rates["floor"]) * 1e3, 2),
            "cpu_ms_per_program": {"sandbox": round((cpu_full - cpu_empty) / n * 1e3, 2),
                                   "sandbox_round1": round((cpu_round1 - cpu_empty) / n * 1e3, 2),
                                   "floor": round(cpu_floor / n * 1e3, 2),
                                   "pool_thread": round(cpu_pool / n * 1e3, 2),
                                   "lever_style": round(cpu_lever / n_lever * 1e3, 2)},
        }
        cpu = entry["cpu_ms_per_program"]
        entry["cpu_speedup_vs_lever_style"] = round(cpu["lever_style"] / max(cpu["sandbox"], 1e-9), 1)
        entry["overhead_cpu_ms"] = round(entry["cpu_ms_per_program"]["sandbox"] - entry["cpu_ms_per_program"]["floor"], 2)
        rows.append(entry)
        print(json.dumps(entry), flush=True)
    report["results"] = rows
    report["load_average_end"] = os.getloadavg()
    print("\n| dataset | programs | sandbox (N workers) | sandbox (1 worker) | floor (exec) | pool+thread | "
          "LEVER-style | x LEVER-style | sandbox cold (x LEVER-style) | overhead/program wall | per core | CPU ms/program sandbox | floor | "
          "LEVER-style | x LEVER-style (CPU) | sandbox w/o issue-12 layers: programs/s, CPU ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for e in rows:
        r = e["programs_per_s"]
        print(f"| {e['dataset']} | {e['programs']} | {r['sandbox']} | {r['sandbox_1_worker']} | {r['floor']} | "
              f"{r['pool_thread']} | {r['lever_style']} | {e['speedup_vs_lever_style']} | "
              f"{r['sandbox_cold']} ({e['speedup_cold_vs_lever_style']}) | "
              f"{e['overhead_ms_wall']} ms | {e['overhead_ms_per_core']} ms | {e['cpu_ms_per_program']['sandbox']} | "
              f"{e['cpu_ms_per_program']['floor']} | {e['cpu_ms_per_program']['lever_style']} | "
              f"{e['cpu_speedup_vs_lever_style']} | {r['sandbox_round1']}, "
              f"{e['cpu_ms_per_program']['sandbox_round1']} |")
    print(f"\nfork + exit + wait of a zygote-like process (the per-program floor of a fresh process): "
          f"{report['fork_exit_ms']} ms median")
    print(f"\nworkers {args.workers}, cpus {os.cpu_count()}, load average {report['load_average_start']} -> "
          f"{report['load_average_end']}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
