"""scripts/bench_train_real.py: HF fed one problem per forward (LEVER's loop, gradients accumulated)
takes the same optimizer step as HF fed the whole step padded to its longest; our feeds hold every
candidate once, packed into one shape, or each micro-batch cut to its own longest candidate."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))


@pytest.mark.slow
def test_per_problem_feeding_takes_the_same_step_as_padding_the_whole_step() -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from bench_train_real import _hf_fill, _per_problem, torch_side

    rng = np.random.default_rng(0)
    tokens = np.zeros((2, 3, 24), np.int32)  # 2 problems x 3 candidates, ragged, padded to 24
    for p, lengths in enumerate(([5, 9, 7], [12, 24, 3])):
        for k, n in enumerate(lengths):
            tokens[p, k, :n] = rng.integers(5, 30000, n)
    labels = np.array([[1, 0, 0], [0, 1, 1]], np.int32)
    assert [a.shape[-1] for a, _ in _per_problem(tokens, labels)] == [9, 24]
    real = [int((tokens > 0).sum())]
    assert _hf_fill([(tokens, labels)], "per_problem", real) > _hf_fill([(tokens, labels)], "step", real)
    params, norms = [], []
    for feed in ("step", "per_problem"):
        run = torch_side("minilm", [(tokens, labels)], threads=1, feed=feed, dropout=0.0)
        run(0)
        params.append([q.detach().clone() for q in run.modules.parameters()])
        norms.append(run.grad_norm)  # the accumulated gradient's norm, before clipping (Adam's step hides scale)
    np.testing.assert_allclose(norms[1], norms[0], rtol=1e-4)
    for a, b in zip(*params):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_packed_micro_batches_share_one_shape_and_hold_every_candidate_once() -> None:
    from bench_train_real import _packed_steps

    rng = np.random.default_rng(1)
    batches = []
    for _ in range(3):
        tokens = np.zeros((4, 3, 40), np.int32)
        lengths = rng.integers(1, 41, (4, 3))
        for p in range(4):
            for k in range(3):
                tokens[p, k, :lengths[p, k]] = rng.integers(5, 1000, lengths[p, k])
        batches.append((tokens, rng.integers(0, 2, (4, 3)).astype(np.int32)))
    steps, segs = _packed_steps(batches, row_len=64, accum=2)
    assert len({tuple(b["packed_tokens"].shape) for b in steps}) == 1 and steps[0]["packed_tokens"].shape[0] == 2
    for (tokens, labels), b in zip(batches, steps):
        real = b["sequence_slot"] < 2 * 3  # per micro-batch: 2 problems x 3 candidates
        assert real.sum() == 12 and int((b["segment_ids"] > 0).sum()) == int((tokens > 0).sum())
        np.testing.assert_array_equal(b["labels"][0], labels[0::2])  # problem g -> micro-batch g % 2 (trainer)
        np.testing.assert_array_equal(b["labels"][1], labels[1::2])
        assert segs >= int(b["sequence_segment"][real].max())


def test_bucketed_micro_batches_are_cut_to_their_own_longest_candidate() -> None:
    from bench_train_real import _bucketed_steps

    rng = np.random.default_rng(2)
    tokens = np.zeros((4, 3, 300), np.int32)  # real_batches pads a step to its longest, not to 512
    lengths = rng.integers(1, 301, (4, 3))
    lengths[1, 2] = 300  # micro-batch 1 (problems 1 and 3) holds the longest candidate
    for p in range(4):
        for k in range(3):
            tokens[p, k, :lengths[p, k]] = rng.integers(5, 1000, lengths[p, k])
    labels = rng.integers(0, 2, (4, 3)).astype(np.int32)
    (step,) = _bucketed_steps([(tokens, labels)], length=512, accum=2, multiple=32, tokens_key="t")
    assert step["micro_widths"] == (-(-int(lengths[0::2].max()) // 32) * 32, 320)  # multiples of 32, not 300
    for m in range(2):  # problem g -> micro-batch g % 2 (the trainer's split), every token kept
        np.testing.assert_array_equal(step["labels"][m], labels[m::2])
        assert int((step["t"][m][..., :step["micro_widths"][m]] > 0).sum()) == int(lengths[m::2].sum())
