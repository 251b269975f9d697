"""Trainer inputs from verifier tasks: problem-grouped train batches and flat eval sets.

Two pipelines give the same token ids (the SeqIO tasks mirror lever_jax.inputs.batching):
  'numpy'  TF-free, here: task specs from lever_jax.inputs.examples, framing from
           lever_jax.inputs.batching (default; CPU/CI).
  'seqio'  lever_jax.seqio.feeds: the registered SeqIO task (registered by a task module such as
           tasks/lever_tasks.py), iterated once to numpy, then grouped by problem.
Either way training batches come from a `ProblemBatcher` (deterministic in (seed, step), so a
resumed run sees the batches it would have seen) and hosts load only their rows
(`partitioning.host_batch_slice`).

Gold programs in training (LEVER, on by default): Spider and WikiTQ problems get their gold
program as an extra candidate when its ``lower_code`` is not already a candidate's, MBPP problems
always, including problems with no correct sample. The gold program is *executed* like any
candidate (the dataset's sandboxed executor, through the execution cache) and labelled by its own
execution (as LEVER labels it by the gold's ``exec_match``). ``gold_mode='copy'`` keeps the older
behaviour (Spider/MBPP only, added only when a correct sample exists, that sample's execution
copied; no execution needed).
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Any, Iterable, Mapping, Optional, Sequence

import numpy as np

from lever_jax.data.arrays import CandidateArrays, from_flat, program_digest
from lever_jax.data.schema import Candidate, Problem
from lever_jax.inputs.serialize import lower_code
from lever_jax.inputs.batching import ProblemBatcher, ProblemExamples, frame_examples, frame_ids, pad_to, task_problems
from lever_jax.inputs.serialize import SerializeOptions
from lever_jax.inputs.examples import TaskSpec, find_spec, iter_spec_problems, problem_examples
from lever_jax.inputs.packing import BATCHING_MODES, bucketed_train_batch, bucketed_width, packed_train_batch
from lever_jax.inputs.tokenizers import TextTokenizer

log = logging.getLogger(__name__)
PIPELINES = ("numpy", "seqio")
GOLD_DATASETS = ("spider", "wikitq", "mbpp")  # LEVER adds the gold program for these
COPY_GOLD_DATASETS = ("spider", "mbpp")  # the older 'copy' mode
GOLD_MODES = ("execute", "copy")
GOLD_SOURCE = "gold"


def resolve_task(name: str, data_dir: Optional[str] = None) -> TaskSpec:
    """The TaskSpec of a task name (TF-free discovery: gin `discover_specs.*`, env
    LEVER_JAX_DATA_DIR, bundled pools)."""
    return find_spec(name, data_dir)


def _normalise_program(text: str) -> str:
    return " ".join(text.split()).lower()


def gold_to_add(problem: Problem, dataset: Optional[str] = None) -> Optional[str]:
    """The gold program LEVER would add to ``problem`` in training, or None.

    Spider / WikiTQ: unless its ``lower_code`` equals a candidate's; MBPP: always; other datasets
    (GSM8k has no gold program): None."""
    dataset = dataset or problem.dataset
    if dataset not in GOLD_DATASETS:
        return None
    from lever_jax.data.datasets import gold_program

    program = gold_program(dataset, problem)
    if not isinstance(program, str) or not program.strip():
        return None
    if dataset != "mbpp":
        gold_lower = lower_code(program, dataset)
        if any(lower_code(c.program, dataset) == gold_lower for c in problem.candidates):
            return None
    return program


def append_gold(problems: Sequence[Problem], dataset: Optional[str] = None, executor: Any = None,
             sandbox: Any = None, cache: Any = None) -> tuple[list[Problem], int]:
    """``problems`` with LEVER's gold candidates appended, each executed in the sandbox.

    ``executor`` / ``sandbox`` / ``cache`` default to the dataset's executor, a new
    :class:`~lever_jax.execution.sandbox.Sandbox` (closed afterwards) and the default execution
    cache. Returns (problems, number of gold programs added)."""
    wanted = {i: g for i, p in enumerate(problems) if (g := gold_to_add(p, dataset)) is not None}
    if not wanted:
        return list(problems), 0
    from lever_jax.execution.runner import execute_problems

    name = dataset or problems[next(iter(wanted))].dataset
    if executor is None:
        from lever_jax.execution.registry import get_executor

        executor = get_executor(name)
    singles = [problems[i].replace(dataset=name, candidates=(Candidate(program=g, source=GOLD_SOURCE),))
               for i, g in wanted.items()]
    own_sandbox = own_cache = None
    try:
        if sandbox is None:
            from lever_jax.execution.sandbox import Sandbox

            sandbox = own_sandbox = Sandbox()
        if cache is None:
            from lever_jax.execution.cache import ExecutionCache

            cache = own_cache = ExecutionCache()
        executed = list(execute_problems(singles, executor, sandbox, cache, progress=False))
    finally:
        if own_sandbox is not None:
            own_sandbox.close()
        if own_cache is not None:
            own_cache.close()
    from lever_jax.data.result_keys import is_error_key, unique_error_key

    out = list(problems)
    for index, single in zip(wanted, executed):
        gold, problem = single.candidates[0], out[index]
        execution = gold.execution
        if execution is not None and (execution.status != "ok" or is_error_key(execution.result_key)):
            # error keys are per (problem, candidate index): re-derive it at the gold's real index
            key = unique_error_key(problem.problem_id, len(problem.candidates))
            gold = dataclasses.replace(gold, execution=dataclasses.replace(execution, result_key=key))
        out[index] = problem.replace(candidates=tuple(problem.candidates) + (gold,))
    wrong = [s.problem_id for s in executed if not (s.candidates[0].execution and s.candidates[0].execution.correct)]
    if wrong:  # labelled 'no' by their own execution, as LEVER does; many of them hint at missing databases
        log.warning("%s: %d of %d gold programs are not correct when executed (first: %s)", name, len(wrong),
                    len(executed), wrong[0])
    return out, len(executed)


def with_gold(problem: Problem) -> tuple[Problem, bool]:
    """The older ``gold_mode='copy'``: `problem` plus its gold program as a correct candidate whose
    execution is copied from a correct sample.

    Returns (problem, added). Not added when the gold is already a candidate, is not a program
    string, or no candidate is correct (its execution would be unknown)."""
    gold = problem.gold
    if not isinstance(gold, str) or not gold.strip():
        return problem, False
    if any(_normalise_program(c.program) == _normalise_program(gold) for c in problem.candidates):
        return problem, False
    donor = next((c for c in problem.candidates if c.execution is not None and c.execution.correct), None)
    if donor is None:
        return problem, False
    gold_cand = Candidate(program=gold, gen_logprob=donor.gen_logprob, num_tokens=donor.num_tokens,
                          count=1, source="gold", execution=donor.execution)
    return problem.replace(candidates=tuple(problem.candidates) + (gold_cand,)), True


def numpy_problems(spec: TaskSpec, tok: TextTokenizer, inputs_length: int,
                   options: Optional[SerializeOptions] = None, add_gold: bool = True,
                   max_problems: Optional[int] = None, gold_mode: str = "execute",
                   gold_runtime: Optional[Mapping[str, Any]] = None) -> list[ProblemExamples]:
    """Tokenised problems of a task (numpy_pipeline framing), with LEVER's gold candidates when
    ``add_gold`` (``gold_mode`` 'execute' or the older 'copy'; ``gold_runtime`` may hold the
    ``executor`` / ``sandbox`` / ``cache`` that :func:`append_gold` uses)."""
    if gold_mode not in GOLD_MODES:
        raise ValueError(f"gold_mode must be one of {', '.join(GOLD_MODES)}, got {gold_mode!r}")
    added = 0
    transform = None
    if add_gold and gold_mode == "execute" and spec.dataset in GOLD_DATASETS:
        problems = [p for p in iter_spec_problems(spec) if p.candidates]
        if max_problems is not None:
            problems = problems[:max_problems]
        problems, added = append_gold(problems, spec.dataset, **dict(gold_runtime or {}))
        out = problem_list_examples(problems, tok, inputs_length, spec, options)
    else:
        def copy_gold(problem: Problem) -> Problem:
            nonlocal added
            problem, was_added = with_gold(problem)
            added += was_added
            return problem

        if add_gold and spec.dataset in COPY_GOLD_DATASETS:
            transform = copy_gold
        out = task_problems(spec, tok, inputs_length, options, transform=transform, max_problems=max_problems)
    if add_gold:
        log.info("%s: gold program added (%s) to %d of %d problems", spec.name, gold_mode, added, len(out))
    if not out:
        raise ValueError(f"task {spec.name!r} ({spec.path}) has no problems with candidates")
    return out


def problem_list_examples(problems: Sequence[Problem], tok: TextTokenizer, inputs_length: int, spec: TaskSpec,
                          options: Optional[SerializeOptions] = None) -> list[ProblemExamples]:
    """Tokenised :class:`ProblemExamples` of given problems (task order = list order)."""
    out = []
    for index, problem in enumerate(problems):
        examples = problem_examples(problem, index, options, dataset=spec.dataset)
        if examples:
            out.append(ProblemExamples.from_examples(index, examples,
                                                     frame_examples(examples, tok, inputs_length, spec.side(options))))
    return out


class TrainBatcher(ProblemBatcher):
    """`ProblemBatcher`'s deterministic sampling over pre-tokenised problems (gold added, or
    from SeqIO); `host_batch` returns this host's rows only, fed as `batching` says
    (lever_jax.inputs.packing.BATCHING_MODES):

    - 'padded': [P_h, K, L] at the full inputs length;
    - 'bucketed': [P_h, K, W], W = the whole batch's longest candidate rounded up to
      `bucket_multiple` (LEVER's own collate pads to the batch's longest); with `accum_steps` > 1
      each micro-batch padded to its own longest, as LEVER's loop pads each forward
      (:func:`lever_jax.inputs.packing.bucketed_train_batch`);
    - 'packed': the host's micro-batches packed into rows of L tokens
      (:func:`lever_jax.inputs.packing.packed_train_batch`; `accum_steps` micro-batches).

    The sampled candidates are the same in every mode; only the layout differs."""

    def __init__(self, problems: Sequence[ProblemExamples], tok: TextTokenizer, inputs_length: int,
                 problems_per_batch: int, candidates_per_problem: int, seed: int = 0,
                 shuffle: bool = True, tokens_key: str = "encoder_input_tokens",
                 host_rows: Optional[slice] = None, batching: str = "padded", accum_steps: int = 1,
                 bucket_multiple: int = 32, row_multiple: int = 1) -> None:
        super().__init__(problems, tok, inputs_length, problems_per_batch, candidates_per_problem, seed, shuffle)
        if batching not in BATCHING_MODES:
            raise ValueError(f"batching must be one of {', '.join(BATCHING_MODES)}, got {batching!r}")
        self.tokens_key = tokens_key
        self.host_rows = host_rows or slice(0, problems_per_batch)
        self.batching, self.accum_steps = batching, accum_steps
        self.bucket_multiple, self.row_multiple = bucket_multiple, row_multiple

    def host_batch(self, step: int) -> dict[str, Any]:
        """This host's part of batch `step`, with the tokens under the model's key (padded /
        bucketed) or packed (see the class docstring)."""
        batch = self.batch(step)
        tokens = batch.pop("input_tokens")
        per_host = self.host_rows.stop - self.host_rows.start
        if self.batching == "bucketed" and self.accum_steps > 1:
            return bucketed_train_batch(tokens, batch["candidate_mask"], batch["labels"], self.tokens_key,
                                        self.tok.pad_id, self.accum_steps, hosts=self.P // per_host,
                                        host=self.host_rows.start // per_host, multiple=self.bucket_multiple)
        if self.batching == "packed":
            return packed_train_batch(tokens, batch["candidate_mask"], batch["labels"], self.length,
                                      self.tok.pad_id, self.accum_steps, hosts=self.P // per_host,
                                      host=self.host_rows.start // per_host,
                                      row_multiple=self.row_multiple)
        if self.batching == "bucketed":
            tokens = tokens[..., :bucketed_width(tokens, self.tok.pad_id, self.bucket_multiple)]
        batch[self.tokens_key] = tokens
        return {k: v[self.host_rows] for k, v in batch.items()}

    def position(self, step: int) -> dict[str, Any]:
        """The JSON data position saved in checkpoints (the batcher is pure in (seed, step))."""
        epoch, offset = divmod(step * self.P, self.num_problems)
        return {"step": int(step), "seed": int(self.seed), "epoch": int(epoch),
                "offset": int(offset), "num_problems": int(self.num_problems)}


@dataclasses.dataclass(frozen=True)
class EvalSet:
    """Every candidate of every problem of an eval task: the token rows to score and the pool's
    one [P, N] container (``data.arrays.CandidateArrays``) that the metrics and the scores file
    read. ``tokens`` [N_total, L] holds the real candidates in row-major order of ``arrays.mask``
    (problem by problem), so flat scores map onto rows with :meth:`to_rows`."""

    name: str
    dataset: str
    tokens: np.ndarray
    arrays: CandidateArrays

    @property
    def num_problems(self) -> int:
        return self.arrays.num_problems

    @property
    def problem_ids(self) -> tuple[str, ...]:
        return self.arrays.problem_ids

    def to_rows(self, values: np.ndarray, fill: float = -np.inf) -> np.ndarray:
        """Per-candidate values [N_total] -> f32 per-problem rows [P, N] (``fill`` on padding)."""
        out = np.full(self.arrays.shape, fill, np.float32)
        out[self.arrays.mask] = np.asarray(values, np.float32)  # row-major order == flat candidate order
        return out


def load_eval_set(spec: TaskSpec, tok: TextTokenizer, inputs_length: int,
                  options: Optional[SerializeOptions] = None, max_problems: Optional[int] = None,
                  problems: Optional[Iterable[Problem]] = None) -> EvalSet:
    """All candidates of `spec` tokenised with the numpy pipeline's framing. ``problems``: the
    task's problems already read (`lever-jax eval` reads its file once); default: read `spec`."""
    ids, offsets, rows = [], [0], []
    fields: dict[str, list] = {k: [] for k in ("labels", "gen_logprob", "num_tokens", "result_ids", "counts",
                                                "errored", "is_greedy", "digests")}
    greedy_correct = []
    for index, problem in enumerate(iter_spec_problems(spec) if problems is None else problems):
        if max_problems is not None and len(ids) >= max_problems:
            break
        examples = problem_examples(problem, index, options, dataset=spec.dataset)
        if not examples:
            continue
        ids.append(problem.problem_id)
        has_lp = bool(examples[0]["has_gen_logprob"])  # else the count fallback: NaN, methods apply it
        greedy = problem.greedy  # the greedy decode when it is not a candidate: scored by its own verdict
        greedy_correct.append(np.nan if greedy is None or greedy.execution is None else float(greedy.execution.correct))
        for ex, cand in zip(examples, problem.candidates):
            fields["errored"].append(cand.execution is not None and cand.execution.status != "ok")
            fields["is_greedy"].append(bool(cand.is_greedy))
            fields["digests"].append(program_digest(cand.program))
            framed = frame_ids(tok.encode(ex["inputs"]), inputs_length, spec.side(options),
                               tok.bos_id, tok.eos_id)
            rows.append(pad_to(framed, inputs_length, tok.pad_id))
            fields["labels"].append(ex["correct"])
            fields["gen_logprob"].append(np.float32(ex["gen_logprob"]) if has_lp else np.nan)
            fields["num_tokens"].append(ex["num_tokens"])
            fields["result_ids"].append(ex["result_id"])
            fields["counts"].append(ex["count"])
        offsets.append(len(rows))
    if not ids:
        raise ValueError(f"eval task {spec.name!r} ({spec.path}) has no problems with candidates")
    arrays = from_flat(ids, np.asarray(offsets, np.int64),
                       gen_logprob=np.asarray(fields["gen_logprob"], np.float32),
                       num_tokens=np.asarray(fields["num_tokens"], np.int32),
                       counts=np.asarray(fields["counts"], np.int32),
                       result_ids=np.asarray(fields["result_ids"], np.int32),
                       correct=np.asarray(fields["labels"], np.int32).astype(bool),
                       errored=np.asarray(fields["errored"], bool), is_greedy=np.asarray(fields["is_greedy"], bool),
                       greedy_correct=np.asarray(greedy_correct, np.float64), program_digests=fields["digests"])
    return EvalSet(name=spec.name, dataset=spec.dataset, tokens=np.stack(rows).astype(np.int32), arrays=arrays)
