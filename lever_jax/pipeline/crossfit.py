"""Cross-fitting, once for every verifier of `lever-jax run`: each problem is scored by a verifier
that never trained on it.

:func:`cross_fit` is the one loop over folds. For fold ``f`` it takes the fold's rows ('train',
'dev' for checkpoint selection, 'heldout' to score), asks a :class:`FoldVerifier` to train and
score them in ``ROOT/fold{f}/``, and keeps what the fold produced there: ``scores.npy`` (log P(yes)
of the held-out rows, written atomically) and ``fold.json`` (the rows' sizes plus what the verifier
reports: the kept checkpoint's step and dev metrics). Resume after a kill: a fold with
``scores.npy`` is finished and never retrained; an interrupted fold is resumed by its verifier
from the checkpoints it keeps under the fold directory.

The verifiers (each a small adapter over its trainer):

- :class:`StepVerifier`: a :class:`StepTrainer` (the features head, lever_jax.pipeline.head, and
  the fine-tuned MiniLM, lever_jax.pipeline.finetune) trained step by step with orbax checkpoints
  in the fold directory, the best by dev loss kept, an interrupted fold resumed from its latest step;
- :class:`GinVerifier`: the gin-configured model (MODEL, ``train.*``, as for `lever-jax train`)
  trained by lever_jax.training.runs on the fold's splits written as executed files (runs.train
  resumes from the fold's model directory), the held-out file scored by runs.evaluate and its
  scores file read back with the one scores-file reader (lever_jax.rerank.scores_file).
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Protocol, Sequence, runtime_checkable

import numpy as np

from lever_jax.data import paths
from lever_jax.data.errors import UserError
from lever_jax.data.jsonl import write_json, write_problems
from lever_jax.data.schema import Problem
from lever_jax.pipeline.run_keys import log

FoldRows = Mapping[str, np.ndarray]  # 'train' / 'dev' / 'heldout' -> rows of the pool's arrays
SPLITS = ("train", "dev", "heldout")


@dataclasses.dataclass(frozen=True)
class FoldResult:
    """What a verifier made of one fold."""

    scores: np.ndarray  # float32 [len(rows['heldout']), width]: log P(yes) of the held-out candidates
    info: dict[str, Any]  # fold.json's fields beyond the rows' sizes (best_step, dev metrics, ...)


@runtime_checkable
class FoldVerifier(Protocol):
    """A verifier kind as :func:`cross_fit` trains it, one fold at a time.

    ``fit_and_score`` trains on ``rows['train']``, selects its checkpoint on ``rows['dev']``
    (never on a held-out row) and scores every candidate of ``rows['heldout']``, keeping whatever
    it needs to resume an interrupted fold under ``fold_dir`` (the loop writes ``scores.npy`` and
    ``fold.json`` there; the verifier must not). It is called only for unfinished folds.
    """

    def fit_and_score(self, fold: int, rows: FoldRows, fold_dir: Path) -> FoldResult: ...


@dataclasses.dataclass(frozen=True)
class CrossFit:
    """The loop's result: every candidate scored by the fold that held it out."""

    scores: np.ndarray  # float32 [B, N] log P(yes), -inf where ``mask`` is False
    fold_seconds: list[float]  # wall time per fold (near 0 for a fold finished earlier)


def cross_fit(verifier: FoldVerifier, num_folds: int, rows_of: Callable[[int], FoldRows], root: Path,
              mask: np.ndarray) -> CrossFit:
    """Every fold of ``range(num_folds)`` (rows from ``rows_of``) trained and scored under
    ``root/fold{f}``, finished folds read back instead of retrained."""
    ver = np.full(mask.shape, -np.inf, np.float32)
    plan = [rows_of(fold) for fold in range(num_folds)]
    check_folds(plan)
    seconds = []
    for fold, rows in enumerate(plan):
        t = time.time()
        if len(rows["heldout"]):  # fewer problems than folds: an empty fold has nothing to score
            ver[rows["heldout"]] = fold_scores(verifier, fold, rows, Path(root) / f"fold{fold}")
        seconds.append(time.time() - t)
    return CrossFit(np.where(mask, ver, -np.inf).astype(np.float32), seconds)


def check_folds(plan: Sequence[FoldRows]) -> None:
    """A fold that scores problems needs a verifier trained on others: one line before any training
    (one problem cross-fitted on itself used to fail deep inside the trainer)."""
    for fold, rows in enumerate(plan):
        if len(rows["heldout"]) and not len(rows["train"]):
            held = sum(len(r["heldout"]) for r in plan)
            others = (f"its {len(rows['dev'])} other problem(s) all pick its checkpoint (RunConfig.dev_fraction)"
                      if len(rows["dev"]) else "there is no other problem")
            raise UserError(
                f"cross-fitting: fold {fold} has no problem to train on ({held} problem(s) in {len(plan)} folds; "
                f"{others}): give more problems, or train on another pool (RunConfig.protocol = 'lever' with "
                "RunConfig.train_pool or RunConfig.train_input)")


def fold_scores(verifier: FoldVerifier, fold: int, rows: FoldRows, fold_dir: Path) -> np.ndarray:
    """One fold: its saved scores when finished, else the verifier's, saved with fold.json."""
    scores_path = fold_dir / "scores.npy"
    if scores_path.exists():
        log(f"fold {fold}: done already ({scores_path})")
        return np.load(scores_path)
    result = verifier.fit_and_score(fold, rows, fold_dir)
    expected = len(rows["heldout"])
    if result.scores.ndim != 2 or result.scores.shape[0] != expected:
        raise ValueError(f"fold {fold}: the verifier scored {result.scores.shape} for {expected} held-out problems")
    with paths.staged(scores_path) as tmp, open(tmp, "wb") as handle:
        np.save(handle, result.scores)
    write_json(fold_dir / "fold.json", {"fold": fold, "held_out": int(len(rows["heldout"])),
                                        "train": int(len(rows["train"])), "dev": int(len(rows["dev"])),
                                        **result.info})
    return result.scores


# ------------------------------------------------------------------------------ step-trained verifiers
class StepSchedule(Protocol):
    """The settings :class:`StepVerifier` reads from a trainer's config."""

    @property
    def steps(self) -> int: ...

    @property
    def eval_every(self) -> int: ...


@runtime_checkable
class StepTrainer(Protocol):
    """The interface of the per-step trainers (lever_jax.pipeline.head.HeadTrainer,
    lever_jax.pipeline.finetune.FinetuneTrainer): a state ``(params, optimizer state)`` trained
    deterministically (step ``s`` of fold ``f`` is the same batch whether or not the fold resumed)."""

    @property
    def config(self) -> StepSchedule: ...

    def init_state(self) -> Any: ...

    def train(self, state: Any, rows: np.ndarray, fold: int, start: int, stop: int,
              on_step: Optional[Callable[[int, dict], None]] = None) -> Any: ...

    def eval_metrics(self, params: Any, rows: np.ndarray) -> dict[str, float]: ...

    def score(self, params: Any, rows: np.ndarray) -> np.ndarray: ...


@dataclasses.dataclass(frozen=True)
class StepVerifier:
    """FoldVerifier of a :class:`StepTrainer`: train ``config.steps`` steps, evaluating the dev rows
    and saving an orbax checkpoint every ``config.eval_every`` steps (the latest and the best by dev
    loss are kept in the fold directory); score the held-out rows with the best."""

    trainer: StepTrainer
    progress: bool = True

    def fit_and_score(self, fold: int, rows: FoldRows, fold_dir: Path) -> FoldResult:
        import jax

        from lever_jax.training.checkpoints import Checkpointer, abstract_like

        state = self.trainer.init_state()
        with Checkpointer(fold_dir, keep_latest=1, keep_best=1, best_metric="dev_loss", best_mode="min") as ckpt:
            start = ckpt.latest_step() or 0
            if start:
                state, _ = ckpt.restore(start, abstract_like(state))
                log(f"fold {fold}: resuming at step {start}")
            state = self._train(ckpt, state, fold, rows, start)
            ckpt.wait()
            best = ckpt.best_step() or ckpt.latest_step()
            state, _ = ckpt.restore(best, abstract_like(state))
            best_metrics = ckpt.metrics(best) or {}
        scores = self.trainer.score(jax.device_get(state[0]), rows["heldout"])
        return FoldResult(scores, {"best_step": best, **best_metrics})

    def _train(self, ckpt: Any, state: Any, fold: int, rows: FoldRows, start: int) -> Any:
        """Steps ``start..config.steps``, a dev evaluation + checkpoint every ``eval_every``."""
        from lever_jax.data.progress import progress_bar

        cfg = self.trainer.config
        bar = progress_bar(total=cfg.steps, initial=start, desc=f"train fold {fold}", unit="step",
                           disable=not self.progress)
        last: dict[str, float] = {}

        def on_step(step: int, aux: dict) -> None:
            bar.update(1)
            if step % 50 == 0:
                last.update(loss=float(aux["loss"]))
                bar.set_postfix(loss=f"{last['loss']:.3f}")

        step = start
        while step < cfg.steps:
            stop = min(cfg.steps, (step // cfg.eval_every + 1) * cfg.eval_every)
            state = self.trainer.train(state, rows["train"], fold, step, stop, on_step)
            step = stop
            dev_metrics = self.trainer.eval_metrics(state[0], rows["dev"])
            ckpt.save(step, state, {"step": step, "fold": fold},
                      metrics={"dev_loss": dev_metrics["loss"], "dev_binary_acc": dev_metrics["binary_acc"]})
        bar.close()
        return state


# ------------------------------------------------------------------------------ the gin-trained verifier
@dataclasses.dataclass(frozen=True)
class GinVerifier:
    """FoldVerifier of the gin-configured model (``RunConfig.verifier = 'trained'``): the fold's
    splits are written as ``fold_dir/data/<dataset>/{train,dev,heldout}.executed.jsonl.gz``,
    lever_jax.training.runs.train trains on train with the dev file choosing the checkpoint
    (``fold_dir/model``; an interrupted fold resumes there), runs.evaluate scores the held-out
    file with the best checkpoint into ``fold_dir/eval/heldout.scores.json``."""

    problems: Sequence[Problem]  # the pool's problems, rows of ``FoldRows``
    width: int  # candidates per row of the scores
    progress: bool = True

    def fit_and_score(self, fold: int, rows: FoldRows, fold_dir: Path) -> FoldResult:
        from lever_jax.training import runs
        from lever_jax.training.configs import EvalDataConfig, TrainDataConfig, TrainLoopConfig

        log(f"fold {fold}: training the verifier ({len(rows['train'])} train / {len(rows['dev'])} dev problems)")
        split_file = write_fold_data(self.problems, rows, fold_dir / "data")
        model_dir = fold_dir / "model"
        data = dataclasses.replace(TrainDataConfig(), task=None, file=split_file["train"], dev_task=None,
                                   dev_file=split_file["dev"])  # the other settings: the gin files'
        loop = dataclasses.replace(TrainLoopConfig(), progress_bar=self.progress)
        train_record = runs.train(model_dir=str(model_dir), data=data, loop=loop)
        scores_json = fold_dir / "eval" / "heldout.scores.json"
        held_data = dataclasses.replace(EvalDataConfig(), task=None, file=split_file["heldout"])
        metrics = runs.evaluate(model_dir=str(model_dir), data=held_data, output=str(scores_json))
        held = [self.problems[i] for i in rows["heldout"]]
        scores = heldout_scores(scores_json, held, self.width, split_file["heldout"])
        return FoldResult(scores, {"best_step": metrics.get("checkpoint_step"), "last_train_record": train_record,
                                   "heldout_binary_acc": metrics.get("binary_acc")})


def write_fold_data(problems: Sequence[Problem], rows: FoldRows, data_dir: Path) -> dict[str, str]:
    """Write the fold's splits as executed files (each once); returns split -> file."""
    dataset = problems[0].dataset
    out = {}
    for split in SPLITS:
        target = data_dir / dataset / f"{split}.executed.jsonl.gz"
        if not target.exists():
            write_problems(target, (problems[i] for i in rows[split]))
        out[split] = str(target)
    return out


def heldout_scores(scores_json: Path, held: Sequence[Problem], width: int, source: str) -> np.ndarray:
    """log P(yes) [len(held), width] of the held-out problems from runs.evaluate's scores file,
    read (and checked against ``held``, the problems of ``source``) by the one scores-file reader:
    null is -inf, padding -inf; a problem the file does not score is an error."""
    from lever_jax.data.arrays import problems_to_arrays
    from lever_jax.rerank.scores_file import read_verifier_scores

    arrays = problems_to_arrays(held)
    ver, covered = read_verifier_scores(scores_json, arrays, source=source)
    if not covered.all():
        missing = arrays.problem_ids[int(np.flatnonzero(~covered)[0])]
        raise ValueError(f"{scores_json}: no scores for problem {missing!r} ({int((~covered).sum())} missing)")
    out = np.full((len(held), width), -np.inf, np.float32)
    cols = min(width, ver.shape[1])
    out[:, :cols] = ver[:, :cols]
    return out
