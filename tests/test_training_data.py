"""RunConfig.train_problems (nested training subsets, same scored problems) and
RunConfig.train_pool (transfer: folds by problem id, no evaluated problem ever trained on)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lever_jax.data.arrays import problems_to_arrays
from lever_jax.data.errors import UserError
from lever_jax.data.folds import assign_folds, fold_rows
from lever_jax.data.schema import Candidate, Execution, Problem
from lever_jax.pipeline.training_data import (GOLD_ID_PREFIX, TRAIN_ID_PREFIX, build_training_view, nested_rank,
                                              with_gold_rows)


def _problems(n: int, dataset: str = "gsm8k", tag: str = "a", start: int = 0) -> list[Problem]:
    out = []
    for i in range(start, start + n):
        cands = tuple(Candidate(program=f"answer = {i + j}  # {tag}", execution=Execution(
            status="ok", result_key=str(i + j), result_text=str(i + j), correct=j == 0)) for j in range(1 + i % 3))
        out.append(Problem(problem_id=f"p{i:04d}", dataset=dataset, question=f"q{i}", context={}, gold=i,
                           candidates=cands))
    return sorted(out, key=lambda p: p.problem_id)


def _view(problems, **kw):
    arrays = problems_to_arrays(problems)
    folds = assign_folds(arrays.problem_ids, 5, 0)
    return build_training_view(problems, arrays, folds, 0, **kw), folds


def test_default_view_is_the_default_fold_rows() -> None:
    view, _ = _view(_problems(40))
    assert view.rows(0, 0.1, 333) is None  # run.train_fold then uses data.folds.fold_rows as before


@settings(max_examples=25, deadline=None)
@given(n=st.integers(20, 120), small=st.integers(1, 40), extra=st.integers(1, 60), fold=st.integers(0, 4),
       seed=st.integers(0, 3))
def test_training_subsets_are_nested_and_score_the_same_problems(n, small, extra, fold, seed) -> None:
    problems = _problems(n)
    big = small + extra
    v_small, folds = _view(problems, train_problems=small)
    v_big, _ = _view(problems, train_problems=big)
    full = fold_rows(folds, fold, 0.1, seed)
    a, b = v_small.rows(fold, 0.1, seed), v_big.rows(fold, 0.1, seed)
    assert set(a["train"]) <= set(b["train"]) <= set(full["train"])
    assert len(a["train"]) == min(small, len(full["train"]))
    assert len(b["train"]) == min(big, len(full["train"]))
    for rows in (a, b):  # the dev slice and the scored fold do not change with the size
        assert np.array_equal(rows["heldout"], full["heldout"]) and np.array_equal(rows["dev"], full["dev"])
        assert not set(rows["train"]) & set(rows["heldout"])


def test_nested_rank_depends_on_the_ids_not_their_order() -> None:
    ids = [f"p{i}" for i in range(30)]
    rank = nested_rank(ids, 0)
    rev = nested_rank(ids[::-1], 0)[::-1]
    assert np.array_equal(rank, rev) and sorted(rank.tolist()) == list(range(30))
    assert not np.array_equal(rank, nested_rank(ids, 1))


def test_transfer_trains_only_on_the_other_pool_outside_the_scored_fold() -> None:
    evaluated = _problems(50, tag="eval")
    other = _problems(45, tag="other", start=3)  # overlapping ids p0003..p0047; p0050.. never scored
    other += _problems(3, tag="other", start=50)
    other = sorted(other, key=lambda p: p.problem_id)
    view, folds = _view(evaluated, train_pool=other, train_pool_name="other")
    assert view.num_eval == 50 and len(view.problems) == 98
    assert all(p.problem_id.startswith(TRAIN_ID_PREFIX) for p in view.problems[50:])
    assert (view.folds[50:] == -1).all() and np.array_equal(view.folds[:50], folds)
    fold_of = dict(zip([p.problem_id for p in evaluated], folds.tolist()))
    for fold in range(5):
        rows = view.rows(fold, 0.1, 333)
        assert np.array_equal(rows["heldout"], np.flatnonzero(folds == fold))
        used = [view.problems[i] for i in np.concatenate([rows["train"], rows["dev"]])]
        assert used and all(i >= 50 for i in np.concatenate([rows["train"], rows["dev"]]))
        for p in used:  # the training pool's own problems, never one of the scored fold's ids
            original = p.problem_id[len(TRAIN_ID_PREFIX):]
            assert "other" in p.candidates[0].program
            assert fold_of.get(original, -1) != fold
        ids = {view.problems[i].problem_id[len(TRAIN_ID_PREFIX):] for i in rows["train"]}
        assert {"p0050", "p0051", "p0052"} - {view.problems[i].problem_id[len(TRAIN_ID_PREFIX):]
                                              for i in rows["dev"]} <= ids  # never-scored ids train everywhere


def test_transfer_with_a_size_limit_keeps_the_same_ids_across_directions() -> None:
    a, b = _problems(60, tag="a"), _problems(60, tag="b")
    va, _ = _view(a, train_problems=10, train_pool=b)
    vb, _ = _view(b, train_problems=10)
    for fold in range(5):
        transfer = {va.problems[i].problem_id[len(TRAIN_ID_PREFIX):] for i in va.rows(fold, 0.1, 0)["train"]}
        in_pool = {vb.problems[i].problem_id for i in vb.rows(fold, 0.1, 0)["train"]}
        assert transfer == in_pool and len(transfer) == 10


def test_bad_options_are_one_clear_error() -> None:
    problems = _problems(20)
    with pytest.raises(UserError, match="train_problems must be >= 1"):
        _view(problems, train_problems=0)
    with pytest.raises(UserError, match="dataset differs"):
        _view(problems, train_pool=_problems(20, dataset="mbpp"), train_pool_name="x")


@settings(max_examples=20, deadline=None)
@given(fold=st.integers(0, 4), seed=st.integers(0, 3), cap=st.one_of(st.none(), st.integers(1, 30)))
def test_added_pool_trains_on_both_pools_never_on_dev_or_scored_problems(fold, seed, cap) -> None:
    evaluated = _problems(50, tag="eval")
    other = sorted(_problems(45, tag="other", start=3) + _problems(3, tag="other", start=50),
                   key=lambda p: p.problem_id)
    view, folds = _view(evaluated, train_pool=other, train_pool_name="other", train_pool_mode="add",
                        train_problems=cap)
    own, _ = _view(evaluated, train_problems=cap)
    rows = view.rows(fold, 0.1, seed)
    expect = own.rows(fold, 0.1, seed) if cap is not None else fold_rows(folds, fold, 0.1, seed)
    # the evaluated pool's rows are exactly the in-pool ones; dev and scored fold unchanged
    assert np.array_equal(rows["train"][rows["train"] < 50], expect["train"])
    assert np.array_equal(rows["dev"], expect["dev"]) and np.array_equal(rows["heldout"], expect["heldout"])
    own_train = {evaluated[i].problem_id for i in expect["train"]}
    added = [view.problems[i] for i in rows["train"][rows["train"] >= 50]]
    assert added and all("other" in p.candidates[0].program for p in added)
    added_ids = {p.problem_id[len(TRAIN_ID_PREFIX):] for p in added}
    never_scored = {"p0050", "p0051", "p0052"}
    assert added_ids - never_scored == own_train & {p.problem_id for p in other}  # same problems, both pools
    assert (never_scored <= added_ids) == (cap is None)  # a size cap counts evaluated problems only


def test_unknown_train_pool_mode_is_one_clear_error() -> None:
    with pytest.raises(UserError, match="train_pool_mode must be one of replace, add"):
        _view(_problems(20), train_pool=_problems(20), train_pool_mode="mix")


def test_add_mode_without_a_pool_is_one_clear_error(tmp_path) -> None:
    from lever_jax.pipeline.pools import training_view
    from lever_jax.pipeline.run import RunConfig

    problems = _problems(20)
    arrays = problems_to_arrays(problems)
    with pytest.raises(UserError, match="needs RunConfig.train_pool"):
        training_view(RunConfig(train_pool_mode="add"), problems, arrays, assign_folds(arrays.problem_ids, 5, 0),
                      tmp_path)


@pytest.mark.slow
@pytest.mark.usefixtures("minilm_weights")
def test_added_pool_through_lever_jax_run(tmp_path) -> None:
    """`lever-jax run` with train_pool_mode='add': more training rows per fold, the same scored problems."""
    import json

    from lever_jax.cli import run as run_cmd

    tiny = ["--quick", "--max_problems", "16", "--no-progress", "--gin_bindings", "RunConfig.execute = False",
            "--gin_bindings", "HeadConfig.steps = 20", "--gin_bindings", "HeadConfig.eval_every = 10",
            "--gin_bindings", "RunConfig.bootstrap = 100", "--gin_bindings", "HeadConfig.use_text = False"]
    docs = {}
    for name, extra in (("own", []), ("add", ["--gin_bindings", "RunConfig.train_pool = 'gsm8k_other_llms'",
                                               "--gin_bindings", "RunConfig.train_pool_mode = 'add'"])):
        assert run_cmd.cli([*tiny, *extra, "--out", str(tmp_path / name)]) == 0
        docs[name] = json.loads((tmp_path / name / "metrics.json").read_text())
    own, add = (docs[k]["training"]["train_rows_per_fold"] for k in ("own", "add"))
    assert all(a > o for a, o in zip(add, own)) and docs["add"]["training"]["train_pool_mode"] == "add"
    assert docs["add"]["problems"] == docs["own"]["problems"] == 16
    keys = [{p.name for p in (tmp_path / k / "folds").iterdir()} for k in ("own", "add")]
    assert keys[0] and keys[1] and not keys[0] & keys[1]  # a shared folds_dir would never resume the other


@settings(max_examples=25, deadline=None)
@given(n=st.integers(10, 60), fold=st.integers(0, 4), seed=st.integers(0, 3), cap=st.sampled_from([None, 5]),
       every=st.integers(1, 4))
def test_gold_rows_train_only_with_their_problem_and_move_no_other_row(n, fold, seed, cap, every) -> None:
    """RunConfig.add_gold: a gold row trains iff its problem's row trains (never dev, never scored),
    and every other row's train / dev / held-out membership is what it is without gold."""
    problems = _problems(n)
    plain, _ = _view(problems, train_problems=cap)
    golds = [(row, Problem(problem_id=p.problem_id, dataset=p.dataset, question=p.question, context={}, gold=p.gold,
                           candidates=(Candidate(program=f"answer = {p.gold}", execution=Execution(
                               status="ok", result_key=str(p.gold), result_text=str(p.gold), correct=True)),)))
             for row, p in enumerate(problems) if row % every == 0]
    view = with_gold_rows(plain, golds)
    before, after = plain.resolved_rows(fold, 0.1, seed), view.resolved_rows(fold, 0.1, seed)
    assert view.gold_rows == len(golds) and view.base_rows == n
    assert np.array_equal(after["dev"], before["dev"]) and np.array_equal(after["heldout"], before["heldout"])
    assert np.array_equal(after["train"][after["train"] < n], before["train"])
    trained_gold = {int(view.gold_source[r - n]) for r in after["train"] if r >= n}
    assert trained_gold == {row for row, _ in golds} & set(before["train"].tolist())
    assert all(view.problems[r].problem_id == GOLD_ID_PREFIX + view.problems[view.gold_source[r - n]].problem_id
               for r in range(n, n + len(golds)))
    assert np.array_equal(view.arrays.correct[:n], plain.arrays.correct)  # the scored rows are untouched
