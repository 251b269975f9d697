"""The host training loop of `lever-jax train` and the checkpoints it starts from: steps,
periodic logging, dev evaluation, checkpoint saves, preemption; opening MODEL_DIR's checkpoints
for a resumed run or for `eval` (a checkpoint of another model is one UserError)."""
from __future__ import annotations

import logging
import time
from typing import Any, Optional

import jax
import numpy as np

from lever_jax.data.errors import UserError
from lever_jax.inputs.feeds import EvalSet, TrainBatcher
from lever_jax.rerank.scores_file import compute_metrics
from lever_jax.training.checkpoints import Checkpointer
from lever_jax.training.configs import CheckpointConfig, ScoringConfig, TrainLoopConfig
from lever_jax.training.metric_sinks import MetricsWriter
from lever_jax.training.model_mismatch import checkpoint_mismatch
from lever_jax.training.preemption import PreemptionGuard
from lever_jax.training.trainer import Trainer

log = logging.getLogger("lever_jax.training.runs")


class TrainLoop:
    """Steps ``start..train_steps`` of one run: logs, dev evaluations and checkpoints."""

    def __init__(self, trainer: Trainer, batcher: TrainBatcher, eval_set: Optional[EvalSet],
                 writer: MetricsWriter, ckpt: Checkpointer, problems_per_batch: int, loop: TrainLoopConfig,
                 checkpoint: CheckpointConfig, scoring: ScoringConfig) -> None:
        self.trainer, self.batcher, self.eval_set, self.writer, self.ckpt = trainer, batcher, eval_set, writer, ckpt
        self.problems_per_batch, self.log_every = problems_per_batch, loop.log_every
        self.checkpoint_every, self.eval_every = checkpoint.every, loop.eval_every or checkpoint.every
        self.scoring, self.best_metric = scoring, checkpoint.best_metric
        self._interval = (time.time(), 0.0, 0)

    def run(self, state: Any, start: int, train_steps: int, progress: bool) -> dict[str, Any]:
        """Steps ``start..train_steps``; on SIGTERM / SIGINT (preemption) the step finishes, a
        checkpoint is saved at it and waited for, and the loop stops (``preempted_at_step``)."""
        bar = None
        if progress:
            from lever_jax.data.progress import progress_bar

            bar = progress_bar(total=train_steps, initial=start, desc="train", unit="step", dynamic_ncols=True)
        record: dict[str, Any] = {}
        self._interval = (time.time(), 0.0, 0)
        pending: list[Any] = []
        with PreemptionGuard() as guard:
            try:
                for step in range(start, train_steps):
                    state, metrics = self.trainer.train_step(state, self.batcher.host_batch(step))
                    pending.append(metrics["num_candidates"])
                    t_start, examples, steps = self._interval
                    self._interval = (t_start, examples, steps + 1)
                    done = step + 1
                    is_last = done == train_steps
                    do_eval = self.eval_set is not None and (done % self.eval_every == 0 or is_last)
                    if bar is not None:
                        bar.update(1)
                    if done % self.log_every == 0 or is_last or do_eval:
                        record = self._log(done, metrics, pending, state, do_eval)
                        pending = []
                        if bar is not None:
                            bar.set_postfix(loss=f"{record['loss']:.4f}", steps_s=f"{record['steps_per_sec']:.2f}",
                                            refresh=False)
                    preempted = not is_last and guard.requested(done)
                    if done % self.checkpoint_every == 0 or is_last or do_eval or preempted:
                        self._save(done, state, record if do_eval else None)
                    if preempted:
                        self.ckpt.wait()  # complete on disk before we report success
                        record = {**record, "preempted_at_step": float(done)}
                        log.warning("preempted (%s): checkpoint saved at step %d of %d; rerun the same command "
                                    "to resume", guard.signal_name, done, train_steps)
                        break
            finally:
                if bar is not None:
                    bar.close()
        return record

    def _dev_metrics(self, params: Any) -> dict[str, float]:
        assert self.eval_set is not None
        scores = self.trainer.score_tokens(params, self.eval_set.tokens, self.scoring.batch_size)
        return compute_metrics(self.eval_set, scores, self.scoring.gen_normalize)

    def _log(self, done: int, metrics: Any, pending: list[Any], state: Any, do_eval: bool) -> dict[str, Any]:
        t_start, examples, steps = self._interval
        values = jax.device_get(metrics)
        examples += float(np.sum(jax.device_get(pending)))
        elapsed = max(time.time() - t_start, 1e-9)
        record = {k: float(v) for k, v in values.items()}
        record["steps_per_sec"] = steps / elapsed
        record["examples_per_sec"] = examples / elapsed
        record["problems_per_sec"] = steps * self.problems_per_batch / elapsed
        record["epoch"] = done * self.problems_per_batch / self.batcher.num_problems
        if do_eval:
            t_eval = time.time()
            dev = self._dev_metrics(state.params)
            record.update({f"eval/{k}": v for k, v in dev.items()})
            record["eval/seconds"] = time.time() - t_eval
            log.info("step %d: dev %s = %.4f (binary_acc %.4f, %d problems, %.1fs)", done, self.best_metric,
                     dev.get(self.best_metric, float("nan")), dev.get("binary_acc", float("nan")),
                     self.eval_set.num_problems, record["eval/seconds"])  # type: ignore[union-attr]
        record = self.writer.write(done, record)
        self._interval = (time.time(), 0.0, 0)
        return record

    def _save(self, done: int, state: Any, record: Optional[dict[str, Any]]) -> None:
        position = self.batcher.position(done)
        position["rng"] = np.asarray(jax.device_get(state.rng)).tolist()
        dev = None if record is None else {k[len("eval/"):]: v for k, v in record.items() if k.startswith("eval/")}
        self.writer.flush()  # a remote metrics.jsonl holds every record up to the step a resume starts from
        self.ckpt.save(done, state, position, metrics=dev)
        log.info("step %d: checkpoint saved under %s%s", done, self.ckpt.directory,
                 "" if dev is None else f" ({self.best_metric} {dev.get(self.best_metric, float('nan')):.4f})")


def open_checkpoints(ckpt: Checkpointer, trainer: Trainer, seed: int, num_problems: int,
                     init_params: Optional[str]) -> tuple[int, Any]:
    """(start step, state): the latest checkpoint's, else a fresh init with pretrained weights
    (``init_params``, else the model file's PRETRAINED) swapped in by the model's `load_pretrained`."""
    start = ckpt.latest_step()
    if start is not None:
        state, data = restore(ckpt, start, trainer, ckpt.model_dir)
        if int(data.get("seed", seed)) != seed or int(data.get("num_problems", num_problems)) != num_problems:
            log.warning("resuming with a different seed or data (%s); the run will not replay exactly", data)
        log.info("resumed from step %d", start)
        return start, state
    state = trainer.init_state(seed)
    if init_params or trainer.model.pretrained:
        merged = trainer.model.load_pretrained(jax.device_get(state.params), init_params)
        state = state.replace(params=jax.device_put(merged, trainer.param_shardings))
    return 0, state


def restore(ckpt: Checkpointer, step: int, trainer: Trainer, model_dir: str) -> tuple[Any, dict[str, Any]]:
    """``ckpt.restore`` into the trainer's state; a checkpoint of another model (orbax's tree or
    shape mismatch) is one UserError naming what differs from MODEL_DIR/config.gin."""
    try:
        return ckpt.restore(step, trainer.abstract_state())
    except (ValueError, TypeError) as err:
        raise checkpoint_mismatch(model_dir, trainer.model, step, err) from None


def restore_for_eval(model_dir: str, trainer: Trainer, best_metric: str, checkpoint_step: Any) -> tuple[int, Any]:
    """(step, state) of the checkpoint `eval` scores with: 'best' by ``best_metric`` among the
    dev-evaluated steps (else the latest, with a warning), 'latest' or a step number."""
    ckpt = Checkpointer(model_dir, best_metric=best_metric, read_only=True)
    try:
        if checkpoint_step in ("best", None):
            step = ckpt.best_step()
            if step is None:
                step = ckpt.latest_step()
                if step is not None:
                    log.warning("no dev-evaluated checkpoint under %s: using the latest (step %s)", model_dir, step)
        elif checkpoint_step == "latest":
            step = ckpt.latest_step()
        else:
            step = int(checkpoint_step)
        if step is None:
            raise UserError(f"no checkpoint under {ckpt.directory} (train first, with the same MODEL_DIR)")
        state = restore(ckpt, step, trainer, model_dir)[0]
    finally:
        ckpt.close()
    return step, state
