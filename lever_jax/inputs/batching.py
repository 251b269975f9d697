"""The verifier input pipeline in pure numpy (no TensorFlow): same examples, same ids as SeqIO.

Two consumers:

- :func:`encode_example` / :func:`iter_features` / :func:`batch_features`: flat, fixed-length
  batches with exactly the features (names, dtypes, values) that the SeqIO tasks give after
  ``lever_jax.seqio.feature_converters`` (tested identical).
- :class:`ProblemBatcher`: problem-grouped training batches ``[P, K, L]`` (LEVER trains on one
  problem's candidates at a time, sampling at most K of them), deterministic from
  ``(seed, step)`` so that a resumed run sees exactly the batches it would have seen. It samples
  :class:`ProblemExamples` (one problem's framed candidates): built from a task
  (:meth:`ProblemBatcher.from_task`, :func:`task_problems`) or given (``ProblemBatcher(problems, ...)``).

Token framing (both pipelines): ``[bos] + ids + [eos]`` where ``bos`` is the vocabulary's
``bos_id`` (``[CLS]`` for MiniLM, none for byte/SentencePiece), the middle cut to fit ``length``
on the truncation side (right for every dataset, as LEVER; ``serialize_options.truncation``
selects the older left cut for Spider/WikiTQ), then right-padded with the vocabulary's ``pad_id``
(0, except RoBERTa's 1: encoder models only). The encoder-decoder target is a single token (the
first token of 'yes' / 'no'), plus EOS when ``targets_eos``.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from lever_jax.data.schema import Problem
from lever_jax.inputs.serialize import SerializeOptions
from lever_jax.inputs.examples import TaskSpec, iter_examples, iter_spec_problems, problem_examples
from lever_jax.inputs.tokenizers import TextTokenizer

MODEL_TYPES = ("encdec", "encoder")
# Rerank/label fields carried next to the tokens (scalars per example).
INT_FIELDS = ("problem_index", "candidate_index", "result_id", "correct", "count", "has_gen_logprob", "num_tokens")
FLOAT_FIELDS = ("gen_logprob",)


def frame_ids(ids: Sequence[int], length: int | None, side: str, bos_id: int | None, eos_id: int) -> list[int]:
    """``[bos] + ids + [eos]``, with ``ids`` cut on ``side`` so that the result fits ``length``."""
    prefix = [] if bos_id is None else [bos_id]
    ids = list(ids)
    if length is not None:
        budget = length - len(prefix) - 1
        if budget < 1:
            raise ValueError(f"sequence length {length} leaves no room for tokens")
        if len(ids) > budget:
            if side == "left":
                ids = ids[len(ids) - budget:]
            elif side == "right":
                ids = ids[:budget]
            else:
                raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    return prefix + ids + [eos_id]


def pad_to(ids: Sequence[int], length: int, pad_id: int = 0) -> np.ndarray:
    out = np.full((length,), pad_id, np.int32)
    out[: len(ids)] = ids[:length]
    return out


def target_ids(tok: TextTokenizer, target: str, targets_eos: bool = False) -> list[int]:
    """The encoder-decoder target: one 'yes'/'no' token (+ EOS when ``targets_eos``)."""
    return [tok.label_id(target)] + ([tok.eos_id] if targets_eos else [])


def target_length(targets_eos: bool) -> int:
    return 2 if targets_eos else 1


def encode_example(
    example: Mapping[str, Any],
    tok: TextTokenizer,
    inputs_length: int,
    side: str,
    model: str = "encdec",
    targets_eos: bool = False,
    input_ids: Sequence[int] | None = None,
) -> dict[str, np.ndarray]:
    """Model features of one example (what the SeqIO feature converter yields for it)."""
    if tok.pad_id != 0 and model == "encdec":
        raise ValueError(f"vocabulary {tok.name!r}: the encoder-decoder features pad with 0 but pad_id is {tok.pad_id}")
    ids = tok.encode(example["inputs"]) if input_ids is None else input_ids
    tokens = pad_to(frame_ids(ids, inputs_length, side, tok.bos_id, tok.eos_id), inputs_length, tok.pad_id)
    label = 1 if example["targets"] == "yes" else 0
    out: dict[str, np.ndarray] = {}
    if model == "encdec":
        targets = np.asarray(target_ids(tok, example["targets"], targets_eos), np.int32)
        out["encoder_input_tokens"] = tokens
        out["decoder_target_tokens"] = targets
        out["decoder_input_tokens"] = np.concatenate([[0], targets[:-1]]).astype(np.int32)
        out["decoder_loss_weights"] = (targets != 0).astype(np.int32)
    elif model == "encoder":
        out["input_tokens"] = tokens
    else:
        raise ValueError(f"model must be one of {MODEL_TYPES}, got {model!r}")
    out["label"] = np.int32(label)
    for name in INT_FIELDS:
        out[name] = np.int32(example[name])
    for name in FLOAT_FIELDS:
        out[name] = np.float32(example[name])
    return out


def iter_features(
    spec: TaskSpec,
    tok: TextTokenizer,
    inputs_length: int,
    model: str = "encdec",
    options: SerializeOptions | None = None,
    targets_eos: bool = False,
) -> Iterator[dict[str, np.ndarray]]:
    """Model features of every example of a task, in task order."""
    for example in iter_examples(spec, options):
        yield encode_example(example, tok, inputs_length, spec.side(options), model, targets_eos)


def batch_features(
    features: Iterable[Mapping[str, np.ndarray]], batch_size: int, drop_remainder: bool = False
) -> Iterator[dict[str, np.ndarray]]:
    """Stack feature dicts into fixed-size batches; a short last batch is zero-padded and has
    ``example_mask`` False on the padding (or dropped with ``drop_remainder``)."""
    buffer: list[Mapping[str, np.ndarray]] = []

    def flush(items: list[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
        out = {k: np.stack([np.asarray(it[k]) for it in items]) for k in items[0]}
        n = len(items)
        if n < batch_size:
            out = {k: np.concatenate([v, np.zeros((batch_size - n,) + v.shape[1:], v.dtype)]) for k, v in out.items()}
        out["example_mask"] = np.arange(batch_size) < n
        return out

    for item in features:
        buffer.append(item)
        if len(buffer) == batch_size:
            yield flush(buffer)
            buffer = []
    if buffer and not drop_remainder:
        yield flush(buffer)


@dataclasses.dataclass
class ProblemExamples:
    """One problem's candidates, tokenised and framed: the unit :class:`ProblemBatcher` samples.

    ``tokens[k]`` holds candidate k's framed, unpadded ids (:func:`frame_ids`); the arrays hold one
    value per candidate (``labels`` 1 = correct). Build with :meth:`from_examples` (example dicts
    of :func:`lever_jax.inputs.examples.problem_examples`) or :func:`task_problems`.
    """

    index: int  # problem_index within the task
    tokens: list[list[int]]
    labels: np.ndarray  # i32[K]
    gen_logprob: np.ndarray  # f32[K]
    result_ids: np.ndarray  # i32[K]
    num_tokens: np.ndarray  # i32[K]

    @classmethod
    def from_examples(
        cls, index: int, examples: Sequence[Mapping[str, Any]], tokens: Sequence[Sequence[int]]
    ) -> "ProblemExamples":
        """From one problem's example dicts (fields ``correct``, ``gen_logprob``, ``result_id``,
        ``num_tokens``) and their framed token ids, in the same order."""
        if len(examples) != len(tokens):
            raise ValueError(f"problem {index}: {len(examples)} examples but {len(tokens)} token lists")
        return cls(
            index=int(index),
            tokens=[ids if isinstance(ids, list) else np.asarray(ids, np.int64).tolist() for ids in tokens],
            labels=np.array([ex["correct"] for ex in examples], np.int32),
            gen_logprob=np.array([ex["gen_logprob"] for ex in examples], np.float32),
            result_ids=np.array([ex["result_id"] for ex in examples], np.int32),
            num_tokens=np.array([ex["num_tokens"] for ex in examples], np.int32),
        )


def frame_examples(
    examples: Iterable[Mapping[str, Any]], tok: TextTokenizer, inputs_length: int, side: str
) -> list[list[int]]:
    """Tokenise and frame the ``inputs`` of each example (unpadded ids, see :func:`frame_ids`)."""
    return [frame_ids(tok.encode(ex["inputs"]), inputs_length, side, tok.bos_id, tok.eos_id) for ex in examples]


def task_problems(
    spec: TaskSpec,
    tok: TextTokenizer,
    inputs_length: int,
    options: SerializeOptions | None = None,
    transform: Callable[[Problem], Problem] | None = None,
    max_problems: int | None = None,
) -> list[ProblemExamples]:
    """The tokenised problems of a task, in task order; problems without candidates are skipped.

    ``transform`` rewrites each problem before serialisation (e.g. adding the gold program as a
    candidate); ``max_problems`` stops after that many (non-empty) problems.
    """
    out: list[ProblemExamples] = []
    for index, problem in enumerate(iter_spec_problems(spec)):
        if max_problems is not None and len(out) >= max_problems:
            break
        if transform is not None:
            problem = transform(problem)
        examples = problem_examples(problem, index, options, dataset=spec.dataset)
        if examples:
            tokens = frame_examples(examples, tok, inputs_length, spec.side(options))
            out.append(ProblemExamples.from_examples(index, examples, tokens))
    return out


class ProblemBatcher:
    """Problem-grouped batches ``[P, K, L]`` for the trainer, deterministic in ``(seed, step)``.

    Epoch ``e`` visits the problems in the order ``permutation(seed, e)``; batch ``step`` takes the
    problems at global positions ``step*P .. step*P+P-1`` of that endless stream (epochs chained).
    Each problem contributes up to ``K`` of its candidates, sampled without replacement with an RNG
    seeded by ``(seed, epoch, problem)``; all candidates when it has at most K. Resuming at step s
    therefore reproduces the uninterrupted run exactly (:meth:`batch` is a pure function of step).

    Construction: ``ProblemBatcher(problems, tok, ...)`` takes already tokenised
    :class:`ProblemExamples` (gold-augmented, read through SeqIO, ...);
    :meth:`from_task` reads and tokenises a task first.

    Batch keys: ``input_tokens`` i32[P,K,L], ``candidate_mask`` bool[P,K], ``labels`` i32[P,K]
    (1 = yes), ``decoder_target_tokens`` i32[P,K,1] (yes/no token), ``gen_logprob`` f32[P,K],
    ``result_ids`` i32[P,K] (-1 padding), ``candidate_index`` i32[P,K] (-1 padding),
    ``problem_index`` i32[P], ``epoch`` i32[P].
    """

    def __init__(
        self,
        problems: Sequence[ProblemExamples],
        tok: TextTokenizer,
        inputs_length: int,
        problems_per_batch: int,
        candidates_per_problem: int,
        seed: int = 0,
        shuffle: bool = True,
    ):
        if not problems:
            raise ValueError("ProblemBatcher needs at least one problem")
        too_long = next((p.index for p in problems if max(map(len, p.tokens), default=0) > inputs_length), None)
        if too_long is not None:
            raise ValueError(f"problem {too_long} has token ids longer than inputs_length={inputs_length}")
        self.tok, self.length = tok, inputs_length
        self.P, self.K, self.seed, self.shuffle = problems_per_batch, candidates_per_problem, seed, shuffle
        self.problems: list[ProblemExamples] = list(problems)

    @classmethod
    def from_task(
        cls,
        spec: TaskSpec,
        tok: TextTokenizer,
        inputs_length: int,
        problems_per_batch: int,
        candidates_per_problem: int,
        seed: int = 0,
        options: SerializeOptions | None = None,
        shuffle: bool = True,
    ) -> "ProblemBatcher":
        """Read, serialise and tokenise a task (:func:`task_problems`), then batch it."""
        problems = task_problems(spec, tok, inputs_length, options)
        if not problems:
            raise ValueError(f"task {spec.name!r} ({spec.path}) has no problems with candidates")
        return cls(problems, tok, inputs_length, problems_per_batch, candidates_per_problem, seed, shuffle)

    @property
    def num_problems(self) -> int:
        return len(self.problems)

    def steps_per_epoch(self) -> float:
        return self.num_problems / self.P

    def _order(self, epoch: int) -> np.ndarray:
        if not self.shuffle:
            return np.arange(self.num_problems)
        return np.random.default_rng([self.seed, epoch]).permutation(self.num_problems)

    def batch(self, step: int) -> dict[str, np.ndarray]:
        """The batch at ``step`` (pure function of seed and step)."""
        P, K, L = self.P, self.K, self.length
        out = {
            "input_tokens": np.full((P, K, L), self.tok.pad_id, np.int32),
            "candidate_mask": np.zeros((P, K), bool),
            "labels": np.zeros((P, K), np.int32),
            "decoder_target_tokens": np.zeros((P, K, 1), np.int32),
            "gen_logprob": np.zeros((P, K), np.float32),
            "result_ids": np.full((P, K), -1, np.int32),
            "candidate_index": np.full((P, K), -1, np.int32),
            "num_tokens": np.zeros((P, K), np.int32),
            "problem_index": np.zeros((P,), np.int32),
            "epoch": np.zeros((P,), np.int32),
        }
        orders: dict[int, np.ndarray] = {}
        for row in range(P):
            position = step * P + row
            epoch, offset = divmod(position, self.num_problems)
            if epoch not in orders:
                orders[epoch] = self._order(epoch)
            index = int(orders[epoch][offset])
            problem = self.problems[index]
            n = len(problem.tokens)
            if n > K:
                rng = np.random.default_rng([self.seed, epoch, index])
                chosen = np.sort(rng.choice(n, size=K, replace=False))
            else:
                chosen = np.arange(n)
            for col, cand in enumerate(chosen):
                ids = problem.tokens[cand]
                out["input_tokens"][row, col, : len(ids)] = ids
                label = int(problem.labels[cand])
                out["labels"][row, col] = label
                out["decoder_target_tokens"][row, col, 0] = self.tok.yes_id if label else self.tok.no_id
            k = len(chosen)
            out["candidate_mask"][row, :k] = True
            out["gen_logprob"][row, :k] = problem.gen_logprob[chosen]
            out["result_ids"][row, :k] = problem.result_ids[chosen]
            out["candidate_index"][row, :k] = chosen
            out["num_tokens"][row, :k] = problem.num_tokens[chosen]
            out["problem_index"][row] = problem.index
            out["epoch"][row] = epoch
        return out

    def iterate(self, start_step: int = 0) -> Iterator[dict[str, np.ndarray]]:
        """Endless batches from ``start_step`` (resume: pass the restored step)."""
        step = start_step
        while True:
            yield self.batch(step)
            step += 1
