"""Cross-fitted verifiers trained end to end (T5 from scratch, or a fine-tuned encoder) for `lever-jax run`.

`RunConfig.verifier = 'trained'` replaces the frozen-feature head of the default run: for every
fold, the fold's training problems, its dev slice and its held-out problems are written as
executed files under the fold directory (``data/<dataset>/{train,dev,heldout}.executed.jsonl.gz``);
`lever_jax.training.runs.train` trains the gin-configured verifier (MODEL, `train.*`, as for
`lever-jax train`) on the train file with the dev file's metric choosing the checkpoint, and
`lever_jax.training.runs.evaluate` scores the held-out problems with the best checkpoint.

Resumable like the head path: a finished fold keeps ``scores.npy`` and is never retrained; an
interrupted fold resumes from its latest orbax checkpoint (runs.train does that).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np

from lever_jax.data import paths
from lever_jax.data.jsonl import write_json, write_problems
from lever_jax.data.schema import Problem

SPLITS = ("train", "dev", "heldout")


def write_fold_data(problems: Sequence[Problem], rows: dict[str, np.ndarray], data_dir: Path) -> str:
    """Write the fold's splits (``rows``: split -> problem rows); returns the dataset name used."""
    dataset = problems[0].dataset
    for split in SPLITS:
        target = data_dir / dataset / f"{split}.executed.jsonl.gz"
        if not target.exists():
            write_problems(target, (problems[i] for i in rows[split]))
    return dataset


def read_scores(scores_json: Path, problem_ids: Sequence[str], width: int) -> np.ndarray:
    """Verifier log P(yes) [len(problem_ids), width] from `runs.evaluate`'s scores file (-inf on padding)."""
    doc = json.loads(scores_json.read_text(encoding="utf-8"))
    by_id = {record["problem_id"]: record for record in doc["problems"]}
    out = np.full((len(problem_ids), width), -np.inf, np.float32)
    for row, pid in enumerate(problem_ids):
        record = by_id.get(pid)
        if record is None:
            raise ValueError(f"{scores_json}: no scores for problem {pid!r}")
        for cand in record["candidates"][:width]:
            out[row, cand["candidate_index"]] = cand["verifier_logprob"]
    return out


def train_fold(problems: Sequence[Problem], rows: dict[str, np.ndarray], width: int, fold_dir: Path,
               progress: bool = True) -> np.ndarray:
    """Train and score one fold; returns log P(yes) [len(rows['heldout']), width]."""
    from lever_jax.training import runs

    scores_path = fold_dir / "scores.npy"
    if scores_path.exists():
        return np.load(scores_path)
    data_dir = fold_dir / "data"
    dataset = write_fold_data(problems, rows, data_dir)
    split_file = {split: str(data_dir / dataset / f"{split}.executed.jsonl.gz") for split in SPLITS}
    model_dir = fold_dir / "model"
    train_record = runs.train(model_dir=str(model_dir), train_task=None, train_file=split_file["train"],
                              dev_task=None, dev_file=split_file["dev"], progress_bar=progress)
    scores_json = fold_dir / "eval" / "heldout.scores.json"
    metrics = runs.evaluate(model_dir=str(model_dir), eval_task=None, eval_file=split_file["heldout"],
                            output=str(scores_json))
    held_ids = [problems[i].problem_id for i in rows["heldout"]]
    scores = read_scores(scores_json, held_ids, width)
    with paths.staged(scores_path) as tmp, open(tmp, "wb") as handle:
        np.save(handle, scores)
    write_json(fold_dir / "fold.json", {"held_out": int(len(rows["heldout"])), "train": int(len(rows["train"])),
                                        "dev": int(len(rows["dev"])), "best_step": metrics.get("checkpoint_step"),
                                        "last_train_record": train_record,
                                        "heldout_binary_acc": metrics.get("binary_acc")})
    return scores
