"""lever_jax.pipeline.finetune: prefix-shared packed rows give every candidate the output it gets alone, and
the packed LEVER loss equals the loss of the candidates scored one by one."""
from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest
from flax import linen as nn

from lever_jax.pipeline.finetune import FinetuneConfig, FinetuneTrainer, build_rows
from lever_jax.pipeline.finetune_states import PoolStates, RaggedStates
from lever_jax.models.configs import LossConfig
from lever_jax.models.verifier import verifier_loss

H = 384


def _ragged(rs: np.random.RandomState, lengths) -> RaggedStates:
    start = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return RaggedStates(rs.normal(0, 1, (int(start[-1]), H)).astype(np.float16), start)


def _pool(seed: int = 0, problems: int = 4, width: int = 5):
    rs = np.random.RandomState(seed)
    n = problems * width
    pool = PoolStates(_ragged(rs, rs.randint(5, 20, problems)), _ragged(rs, rs.randint(3, 40, n)),
                      _ragged(rs, rs.randint(2, 6, n)), np.arange(n).reshape(problems, width),
                      np.arange(n).reshape(problems, width))
    mask = np.ones((problems, width), bool)
    mask[1, 3:] = False
    labels = rs.randint(0, 2, (problems, width))
    return pool, labels, mask


def _trainer(use_features: bool = False) -> FinetuneTrainer:
    pool, labels, mask = _pool()
    cfg = FinetuneConfig(frozen_layers=5, row_len=128, max_candidates_per_row=6, max_groups_per_row=3,
                         dropout=0.0, use_candidate_features=use_features)
    feats = np.random.RandomState(1).normal(0, 1, (*labels.shape, 20)).astype(np.float32)
    trainer = FinetuneTrainer(cfg, pool, labels, mask, feats if use_features else None)
    return trainer


def _random_params(trainer: FinetuneTrainer):
    b = trainer._batch([0], [[0]], 1)
    keys = ("states", "group", "cand", "part", "cand_group", "seq_row", "seq_cand", "feats")
    return nn.unbox(trainer.module.init(jax.random.PRNGKey(0), *(b[k] for k in keys), True)["params"])


def test_rows_pack_every_candidate_once_with_its_question() -> None:
    trainer = _trainer()
    cols = [np.flatnonzero(trainer.mask[b]) for b in range(4)]
    rows = build_rows(trainer.pool, trainer.config, list(range(4)), cols, 5)
    valid = rows.seq_slot < 20
    assert sorted(rows.seq_slot[valid].tolist()) == sorted(b * 5 + j for b in range(4) for j in range(len(cols[b])))
    for r, c, s in zip(rows.seq_row[valid], rows.seq_cand[valid], rows.seq_slot[valid]):
        b, n = divmod(int(s), 5)
        prog = trainer.pool.program[trainer.pool.program_index[b, n]]
        got = rows.states[r][(rows.cand[r] == c) & (rows.part[r] == 2)]
        np.testing.assert_array_equal(got, prog)
        g = rows.cand_group[r, c - 1]
        np.testing.assert_array_equal(rows.states[r][(rows.group[r] == g) & (rows.part[r] == 1)],
                                      trainer.pool.question[b])
    assert rows.states.shape[0] < valid.sum()  # packed: fewer rows than candidates


@pytest.mark.slow
def test_packed_scores_equal_scoring_each_candidate_alone() -> None:
    for features in (False, True):
        trainer = _trainer(features)
        params = _random_params(trainer)
        together = trainer.score(params, np.arange(4))
        alone = np.full_like(together, -np.inf)
        for b in range(4):
            for n in np.flatnonzero(trainer.mask[b]):
                batch = trainer._batch([b], [[n]], 1)
                alone[b, n] = np.asarray(jax.nn.log_softmax(trainer._logits(params, batch), -1)[0, 1])
        np.testing.assert_allclose(together, alone, rtol=1e-4, atol=1e-4)
        assert np.isinf(together[1, 3:]).all() and np.isfinite(together[trainer.mask]).all()


def test_packed_loss_is_levers_loss_of_the_unpacked_logits() -> None:
    trainer = _trainer()
    params = _random_params(trainer)
    metrics = trainer.eval_metrics(params, np.arange(4))
    logp_yes = trainer.score(params, np.arange(4))
    logp_no = np.log1p(-np.exp(np.where(trainer.mask, logp_yes, -1.0)))
    logits = np.stack([logp_no, np.where(trainer.mask, logp_yes, 0.0)], -1)
    ref, _ = verifier_loss(logits, trainer.labels, trainer.mask, LossConfig())
    np.testing.assert_allclose(metrics["loss"], float(ref), rtol=1e-4)


@pytest.mark.slow
def test_train_step_is_deterministic_and_lowers_the_loss() -> None:
    trainer = _trainer()
    trainer = FinetuneTrainer(dataclasses.replace(trainer.config, steps=8, warmup_steps=1,
                                                  learning_rate=3e-3, head_learning_rate=1e-2),
                              trainer.pool, trainer.labels, trainer.mask)
    params = _random_params(trainer)
    state = (params, trainer.tx.init(params))
    rows = np.arange(4)
    before = trainer.eval_metrics(params, rows)["loss"]
    a = trainer.train(state, rows, 0, 0, 8)
    b = trainer.train(state, rows, 0, 0, 8)
    for x, y in zip(jax.tree_util.tree_leaves(a[0]), jax.tree_util.tree_leaves(b[0])):
        np.testing.assert_array_equal(x, y)
    assert trainer.eval_metrics(a[0], rows)["loss"] < before


class _CountingEncoder:
    """Stands in for LowerEncoder: records which (length, side) it encoded, returns fixed states."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, str, int]] = []

    def encode(self, texts, max_len, keep, batch_size, progress=None) -> RaggedStates:
        self.calls.append((max_len, keep, len(texts)))
        lengths = [min(len(t), max_len) for t in texts]
        start = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        return RaggedStates(np.full((int(start[-1]), H), max_len, np.float16), start)


def test_state_cache_re_encodes_only_the_segment_whose_settings_changed(tmp_path) -> None:
    from lever_jax.pipeline.finetune_states import cached_states

    enc = _CountingEncoder()
    texts = {"question": ["q one", "q two"], "result": ["{'answer': '3'}", "ERROR"]}
    lens = {"question": ("head", 96), "result": ("tail", 16)}

    def encode_all(cfg: FinetuneConfig) -> dict[str, RaggedStates]:
        return {part: cached_states(cfg, part, texts[part], getattr(cfg, f"{part}_len"), lens[part][0], tmp_path,
                                    lambda: enc, progress=False) for part in texts}

    base = FinetuneConfig()
    first = encode_all(base)
    assert len(enc.calls) == 2
    again = encode_all(base)  # everything cached
    assert len(enc.calls) == 2 and np.array_equal(again["result"].data, first["result"].data)
    longer = encode_all(dataclasses.replace(base, result_len=64))  # only the results are re-encoded
    assert enc.calls[2:] == [(64, "tail", 2)]
    assert np.array_equal(longer["question"].data, first["question"].data)
    encode_all(dataclasses.replace(base, frozen_layers=4))  # another depth: every segment again
    assert [c[0] for c in enc.calls[3:]] == [96, 16]


def test_schema_in_question_puts_the_schema_after_the_question_and_names_its_own_fold_dirs() -> None:
    """``FinetuneConfig.schema_in_question`` (not LEVER's input): the question segment keeps its head,
    so the question comes first and a long schema is what gets cut; off, the segment is the
    question alone and fold directories keep the names they had before the option existed."""
    from lever_jax.data.schema import Problem
    from lever_jax.pipeline.finetune_states import question_text

    spider = Problem("spider-dev-0000", "spider", "How many singers do we have?", {"db_id": "concert_singer"}, "", ())
    with_schema = question_text(spider, True)
    assert with_schema.startswith("How many singers do we have?\n") and "singer_in_concert" in with_schema
    assert question_text(spider, False) == "How many singers do we have?"
    mbpp = Problem("mbpp-11", "mbpp", "Remove a character.", {}, "", ())
    assert question_text(mbpp, True) == "Remove a character."  # no schema: the question alone
    assert "schema_in_question" not in FinetuneConfig().training_key()
    assert FinetuneConfig(schema_in_question=True).training_key()["schema_in_question"] is True
