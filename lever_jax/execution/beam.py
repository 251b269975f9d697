"""Execute a samples file on Apache Beam: the same executors and sandbox, spread over workers.

    lever-jax execute --runner beam --dataset gsm8k --input s.jsonl.gz --output e.jsonl.gz \\
        [--beam_options="--direct_num_workers=4"]          # DirectRunner, multi-processing
    ... --beam_options="--runner=DataflowRunner --project=P --region=R --temp_location=gs://b/tmp \\
        --setup_file=./setup.py"                            # or FlinkRunner / SparkRunner

Pipeline: ``ReadFromText(input)`` -> ``Reshuffle`` (a gzip file is one unsplittable bundle; this
spreads its problems over the workers) -> ``BatchElements`` -> :class:`ExecuteProblems` (one
:class:`Sandbox` per DoFn instance, started in ``setup()``, closed in ``teardown()``; inside, the
local runner's :func:`execute_problems` with its cache and dedup) -> ``WriteToText`` shards in a
temporary folder beside the output. The launcher validates the input first (file, line and
field on bad input, as the local runner) and, after the pipeline, merges the shards back into
input order and writes the data-contract file atomically (then removes the shards), so the
output is byte-identical to ``--runner local``'s for deterministic programs.

Counters (``lever_jax`` namespace: executed, cached, deduplicated and one per status) come back
through Beam metrics. The execution cache is SQLite on a local disk: shared by the DirectRunner's
processes, per-worker (useless, harmless) on a cluster -- pass ``--no-cache`` there.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import secrets
import shlex
import sys
import tempfile
import time
from typing import Any, Iterable, Iterator, Sequence

from lever_jax.data import paths
from lever_jax.data.jsonl import DataFileError, atomic_writer, read_problems
from lever_jax.data.schema import problem_from_dict, problem_to_dict
from lever_jax.execution.base import Limits
from lever_jax.execution.runner import RunStats

NAMESPACE = "lever_jax"
DEFAULT_OPTIONS = ("--runner=DirectRunner", "--direct_running_mode=multi_processing",
                   "--default_sdk_harness_log_level=WARNING")


def _dumps(obj: Any) -> str:
    """The data contract's line format (as ``jsonl.write_json_lines``)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _beam() -> Any:
    try:
        import apache_beam
    except ImportError:
        raise ImportError("--runner beam needs Apache Beam: pip install -c constraints.txt 'lever-jax[beam]'") from None
    return apache_beam


@contextlib.contextmanager
def _scratch_tmp() -> Iterator[None]:
    """The pipeline's temporary files in a directory of ours, removed when it ends: a local Beam
    run leaves empty directories in TMPDIR (its job service's, its requirements cache, its
    workers'), one set per run. This process's and its children's TMPDIR point there meanwhile."""
    saved = tempfile.tempdir, os.environ.get("TMPDIR")
    with tempfile.TemporaryDirectory(prefix="lever-beam-", ignore_cleanup_errors=True) as scratch:
        tempfile.tempdir, os.environ["TMPDIR"] = scratch, scratch
        try:
            yield
        finally:
            tempfile.tempdir = saved[0]
            if saved[1] is None:
                os.environ.pop("TMPDIR", None)
            else:
                os.environ["TMPDIR"] = saved[1]


@dataclasses.dataclass
class BeamStats(RunStats):
    """The local runner's counters, plus the number of problems."""

    problems: int = 0


def _execute_problems_fn() -> type:
    """The DoFn class (built lazily so that importing this module does not need Beam)."""
    beam = _beam()
    from apache_beam.metrics import Metrics

    class ExecuteProblems(beam.DoFn):
        """Batches of input lines -> executed data-contract lines; one sandbox per instance."""

        def __init__(self, dataset: str, limits: Limits, sandbox_workers: int, cache_dir: str | None,
                     executor_options: dict[str, str] | None = None):
            self.dataset, self.limits, self.sandbox_workers, self.cache_dir = dataset, limits, sandbox_workers, cache_dir
            self.executor_options = dict(executor_options or {})
            self._counters: dict[str, Any] = {}

        def setup(self) -> None:
            from lever_jax.execution.registry import get_executor
            from lever_jax.execution.sandbox import Sandbox

            self._executor = get_executor(self.dataset, self.executor_options)
            self._sandbox = Sandbox(workers=self.sandbox_workers, limits=self.limits)

        def _count(self, name: str, value: int) -> None:
            if value:
                if name not in self._counters:
                    self._counters[name] = Metrics.counter(NAMESPACE, name)
                self._counters[name].inc(value)

        def process(self, lines: Sequence[str]) -> Iterator[str]:
            from lever_jax.execution.cache import ExecutionCache
            from lever_jax.execution.runner import RunStats, execute_problems

            problems = [problem_from_dict(json.loads(line)) for line in lines]
            stats = RunStats()
            # The cache is opened per batch: Beam may call setup/process/teardown from different
            # threads, and a SQLite connection belongs to the thread that opened it.
            cache = ExecutionCache(self.cache_dir) if self.cache_dir is not None else None
            try:
                executed = [_dumps(problem_to_dict(p)) for p in execute_problems(
                    problems, self._executor, self._sandbox, cache, progress=False, stats=stats)]
            finally:
                if cache is not None:
                    cache.close()
            yield from executed
            for name in ("candidates", "executed", "cached", "deduplicated"):
                self._count(name, getattr(stats, name))
            for status, count in stats.statuses.items():
                self._count(f"status:{status}", count)

        def teardown(self) -> None:
            if getattr(self, "_sandbox", None) is not None:
                self._sandbox.close()

    return ExecuteProblems


def validate_input(path: str, dataset: str) -> dict[str, int]:
    """Stream-validate the samples file (DataFileError on bad input); problem_id -> input index."""
    order: dict[str, int] = {}
    for problem in read_problems(path):
        if problem.dataset != dataset:
            raise DataFileError(path, None, "dataset", f"problem {problem.problem_id} is {problem.dataset!r}, "
                                f"not {dataset!r}")
        order[problem.problem_id] = len(order)
    return order


def merge_shards(shards: Iterable[str], order: dict[str, int], output: str) -> int:
    """Write the shards' lines in input order to ``output`` atomically; returns the problem count.

    Every input problem must appear exactly once: a lost or duplicated problem is an error (the
    output is then not written), never a silently short file."""
    lines: dict[int, bytes] = {}
    for shard in shards:
        with paths.open_binary(shard) as handle:
            for raw in handle:
                if not raw.strip():
                    continue
                pid = json.loads(raw)["problem_id"]
                index = order.get(pid)
                if index is None or index in lines:
                    raise RuntimeError(f"{shard}: problem {pid!r} is {'unknown' if index is None else 'duplicated'}")
                lines[index] = raw.rstrip(b"\n")
    if len(lines) != len(order):
        missing = [pid for pid, i in order.items() if i not in lines][:3]
        raise RuntimeError(f"Beam output lacks {len(order) - len(lines)} problems (e.g. {missing})")
    with atomic_writer(output) as handle:  # text writes line by line, as write_problems: same gzip bytes
        for index in range(len(order)):
            handle.write(lines[index].decode("utf-8") + "\n")
    return len(order)


def execute_file(input_path: str, output_path: str, dataset: str, limits: Limits = Limits(),
                 sandbox_workers: int = 1, cache_dir: str | None = None,
                 beam_options: Sequence[str] = (), batch_size: int = 64,
                 executor_options: dict[str, str] | None = None) -> BeamStats:
    """Run the Beam pipeline of the module doc; ``cache_dir=None`` runs without a cache;
    ``executor_options``: lever_jax.execution.registry.EXECUTOR_OPTIONS."""
    beam = _beam()
    from apache_beam.metrics.metric import MetricsFilter
    from apache_beam.options.pipeline_options import PipelineOptions

    start = time.monotonic()
    order = validate_input(input_path, dataset)
    stats = BeamStats(problems=len(order))
    parent = os.path.dirname(output_path.rstrip("/")) or "."
    name = os.path.basename(output_path.rstrip("/"))
    shard_dir = paths.join(parent, f".{name}.beam-{secrets.token_hex(4)}")
    given = list(beam_options)
    options = [o for o in DEFAULT_OPTIONS if not any(g.startswith(o.split("=")[0] + "=") for g in given)] + given
    if "--runner=DirectRunner" in options and not any(o.startswith("--direct_num_workers") for o in options):
        options.append(f"--direct_num_workers={os.cpu_count() or 1}")
    execute_fn = _execute_problems_fn()(dataset, limits, sandbox_workers, cache_dir, executor_options)
    try:
        pipeline = beam.Pipeline(options=PipelineOptions(options))
        _ = (
            pipeline
            | "read" >> beam.io.ReadFromText(input_path)
            | "nonblank" >> beam.Filter(lambda line: bool(line.strip()))
            | "spread" >> beam.Reshuffle()
            | "batch" >> beam.BatchElements(min_batch_size=1, max_batch_size=batch_size)
            | "execute" >> beam.ParDo(execute_fn)
            | "shards" >> beam.io.WriteToText(paths.join(shard_dir, "part"), file_name_suffix=".jsonl")
        )
        with _scratch_tmp():
            result = pipeline.run()
            result.wait_until_finish()
            counters = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))["counters"]
        stats.seconds = time.monotonic() - start
        for counter in counters:
            value = counter.committed if counter.committed is not None else counter.attempted
            key = counter.key.metric.name
            if key.startswith("status:"):
                stats.statuses[key[len("status:"):]] = stats.statuses.get(key[len("status:"):], 0) + value
            elif hasattr(stats, key):
                setattr(stats, key, getattr(stats, key) + value)
        merge_shards(paths.glob(paths.join(shard_dir, "part*")), order, output_path)
    finally:
        paths.remove_tree(shard_dir)
    stats.seconds = time.monotonic() - start
    return stats


def main_from_args(args: Any) -> int:
    """``lever-jax execute --runner beam``: the CLI's arguments -> pipeline; prints the summary."""
    import logging

    logging.getLogger("apache_beam").setLevel(logging.WARNING)  # Beam's INFO lines drown the summary
    limits = Limits.for_timeout(args.timeout, memory_mb=args.memory_mb)
    cache_dir = None
    if not args.no_cache:
        from lever_jax.execution.cache import default_cache_dir

        cache_dir = os.fspath(args.cache_dir or default_cache_dir())
    try:
        stats = execute_file(args.input, args.output, args.dataset, limits, sandbox_workers=args.workers or 1,
                             cache_dir=cache_dir, beam_options=shlex.split(args.beam_options or ""),
                             executor_options=getattr(args, "executor_options", None))
    except DataFileError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(stats.statuses.items()))
    print(f"executed {stats.problems} problems, {stats.candidates} candidates on Beam: {stats.executed} run, "
          f"{stats.cached} cached, {stats.deduplicated} duplicates; statuses: {statuses}; "
          f"{stats.programs_per_s:.0f} programs/s; wrote {args.output}", file=sys.stderr)
    return 0
