"""Hand-crafted GSM8k candidate features and the verifier head that reads them."""
from __future__ import annotations

import numpy as np
import pytest

from lever_jax.pipeline import gsm8k_features as cf
from lever_jax.data.schema import Candidate, Execution, Problem
from lever_jax.pipeline.encoder_features import PoolFeatures
from lever_jax.pipeline.head import HeadConfig, HeadTrainer

QUESTION = ("Janet's ducks lay 16 eggs per day. She eats three for breakfast every morning and bakes muffins "
            "for her friends every day with four. She sells the remainder for $2 per egg. How much does she make?")
GOOD = "# eggs\neggs = 16\nsold = eggs - 3 - 4\nanswer = sold * 2\n"
BAD = "eggs = 16\nsold = eggs - 3\nanswer = sold / 7\n"


def _candidate(program: str, status: str, answer, result_text: str) -> Candidate:
    details = None if answer is None else {"answer": answer}
    return Candidate(program=program, execution=Execution(status=status, result_key=str(answer), result_text=result_text,
                                                          details=details))


def _problem(*candidates: Candidate) -> Problem:
    return Problem("gsm8k-test-0000", "gsm8k", QUESTION, {}, 18.0, tuple(candidates))


def _named(vector: np.ndarray) -> dict[str, float]:
    return dict(zip(cf.FEATURE_NAMES, vector.tolist()))


def test_question_numbers_reads_digits_words_and_percentages():
    assert cf.question_numbers("She has 1,200 apples, three pears and 25% of a pie, $2.50 each") == \
        [0.25, 2.5, 3.0, 25.0, 1200.0]


def test_features_of_a_correct_candidate_hand_checked():
    good = _candidate(GOOD, "ok", 18.0, "{'eggs': '16', 'sold': '9', 'answer': '18'}")
    f = _named(cf.gsm8k_features(_problem(good), good))
    # question numbers other than 0/1: 16, 3, 4, 2 -- all four are literals of the program
    assert f["question_numbers_used"] == 1.0
    assert f["literals_not_in_question"] == 0.0
    assert f["unparsable"] == 0.0
    assert f["status_ok"] == 1.0 and f["no_answer"] == 0.0
    assert f["answer_integer"] == 1.0 and f["answer_negative"] == 0.0 and f["answer_decimals"] == 0.0
    assert f["locals_non_integer"] == 0.0 and f["locals_negative"] == 0.0
    assert f["question_numbers_in_locals"] == pytest.approx(1 / 4)  # only 16 is a final local
    assert f["log_num_statements"] == pytest.approx(np.log1p(3) / 3)


def test_features_of_a_wrong_candidate_differ_where_expected():
    bad = _candidate(BAD, "ok", 13 / 7, "{'eggs': '16', 'sold': '13', 'answer': '1.857142857142857'}")
    f = _named(cf.gsm8k_features(_problem(bad), bad))
    assert f["question_numbers_used"] == pytest.approx(2 / 4)  # 16 and 3 used; 4 and 2 not
    assert f["literals_not_in_question"] == pytest.approx(1 / 3)  # 7 is not in the question
    assert f["answer_integer"] == 0.0 and f["answer_decimals"] == 1.0
    assert f["locals_non_integer"] == pytest.approx(1 / 3)


def test_errors_and_unparsable_programs():
    err = _candidate("answer = (", "error", None, "ERROR")
    f = _named(cf.gsm8k_features(_problem(err), err))
    assert f["unparsable"] == 1.0 and f["status_error"] == 1.0 and f["no_answer"] == 1.0
    assert f["status_ok"] == 0.0 and f["log_num_locals"] == 0.0


def test_pool_features_shape_padding_and_dataset_check():
    good = _candidate(GOOD, "ok", 18.0, "{'answer': '18'}")
    out = cf.pool_candidate_features([_problem(good), _problem(good, good)], width=3)
    assert out.shape == (2, 3, cf.NUM_FEATURES) and out.dtype == np.float32
    assert not out[0, 1:].any() and np.array_equal(out[1, 0], out[1, 1])
    with pytest.raises(ValueError, match="gsm8k only"):
        cf.pool_candidate_features([_problem(good).replace(dataset="mbpp")], width=1)


def test_ablation_mask_drops_the_right_group():
    assert cf.ablation_mask(True, True).sum() == cf.NUM_FEATURES
    keep_exec = _named(cf.ablation_mask(False, True))
    assert keep_exec["question_numbers_used"] == 0.0 and keep_exec["answer_integer"] == 1.0
    keep_prog = _named(cf.ablation_mask(True, False))
    assert keep_prog["question_numbers_used"] == 1.0 and keep_prog["answer_integer"] == 0.0


@pytest.mark.slow
def test_head_learns_from_candidate_features_alone():
    """A head on candidate features only separates labels that one feature determines."""
    rng = np.random.default_rng(0)
    b, n, d = 64, 6, 8
    cand = rng.random((b, n, cf.NUM_FEATURES)).astype(np.float32)
    labels = cand[..., cf.FEATURE_NAMES.index("answer_integer")] > 0.5
    feats = PoolFeatures(np.zeros((b, d), np.float32), np.zeros((b, n, d), np.float32),
                         np.zeros((b, n, d), np.float32), cand)
    config = HeadConfig(hidden=32, dropout=0.0, steps=150, problems_per_step=16, candidates_per_step=n,
                        learning_rate=3e-3, warmup_steps=10, use_text=False, use_candidate_features=True)
    trainer = HeadTrainer(config, feats, labels, np.ones((b, n), bool))
    rows = np.arange(b)
    state = trainer.train(trainer.init_state(), rows, fold=0, start=0, stop=config.steps)
    scores = trainer.score(state[0], rows)
    assert ((scores > np.log(0.5)) == labels).mean() > 0.9
    # the no_exec ablation removes the only informative feature: no better than chance
    blind = HeadTrainer(HeadConfig(**{**config.__dict__, "use_result": False}), feats, labels, np.ones((b, n), bool))
    state = blind.train(blind.init_state(), rows, fold=0, start=0, stop=config.steps)
    assert ((blind.score(state[0], rows) > np.log(0.5)) == labels).mean() < 0.75


def test_head_without_any_input_is_an_error():
    feats = PoolFeatures(np.zeros((2, 4), np.float32), np.zeros((2, 3, 4), np.float32), np.zeros((2, 3, 4), np.float32))
    with pytest.raises(ValueError, match="PoolFeatures.candidate"):
        HeadTrainer(HeadConfig(use_candidate_features=True), feats, np.zeros((2, 3), bool), np.ones((2, 3), bool))
    trainer = HeadTrainer(HeadConfig(use_text=False), feats, np.zeros((2, 3), bool), np.ones((2, 3), bool))
    with pytest.raises(ValueError, match="no input"):
        trainer.init_state()
