"""The TF-free pipeline: examples, folds, framing, fixed-length batches, problem-grouped batcher."""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lever_jax.inputs.batching import ProblemBatcher, batch_features, encode_example, frame_ids, iter_features
from lever_jax.inputs.examples import (
    TaskSpec,
    discover_files,
    discover_specs,
    iter_examples,
    iter_spec_problems,
)
from lever_jax.inputs.tokenizers import get_vocabulary
from lever_jax.inputs.serialize import SerializeOptions

FIXTURES = Path(__file__).parent / "fixtures" / "executed"
ROOT = Path(__file__).resolve().parents[1]


def _spec(dataset: str, split: str) -> TaskSpec:
    return next(s for s in discover_specs(FIXTURES, include_bundled=False) if s.name == f"lever_verify_{dataset}_{split}")


def test_discovery_finds_every_fixture():
    names = {s.name for s in discover_specs(FIXTURES, include_bundled=False)}
    assert names == {
        "lever_verify_gsm8k_test",
        "lever_verify_gsm8k_train",
        "lever_verify_mbpp_test",
        "lever_verify_humaneval_test",
        "lever_verify_spider_dev",
        "lever_verify_wikitq_test",
    }
    assert ("spider", "dev") in discover_files(FIXTURES)
    with pytest.raises(FileNotFoundError, match="data dir not found"):
        discover_files(FIXTURES / "missing")


def test_examples_carry_rerank_fields():
    exs = list(iter_examples(_spec("gsm8k", "test")))
    assert len(exs) == 9
    first = exs[0]
    assert first["targets"] == "yes" and first["problem_index"] == 0 and first["candidate_index"] == 0
    assert first["inputs"].startswith("Janet") and first["inputs"].endswith("| {'eggs': 9, 'answer': 18}")
    # result groups are dense per problem by first appearance: 18, 26, 18, error
    assert [e["result_id"] for e in exs[:4]] == [0, 1, 0, 2]
    assert exs[4]["problem_index"] == 1 and exs[4]["result_id"] == 0
    assert exs[0]["gen_logprob"] == pytest.approx(-5.1) and exs[0]["has_gen_logprob"] == 1


def test_count_fallback_when_no_gen_logprob():
    exs = [e for e in iter_examples(_spec("mbpp", "test")) if e["problem_index"] == 0]
    # counts 2, 1, 1 -> log(2/4), log(1/4), log(1/4) (LEVER's frequency fallback)
    assert [e["gen_logprob"] for e in exs] == pytest.approx([math.log(0.5), math.log(0.25), math.log(0.25)])
    assert all(e["has_gen_logprob"] == 0 for e in exs)


def test_folds_partition_problems_with_a_disjoint_dev_slice():
    from lever_jax.data.folds import assign_folds

    path = FIXTURES / "gsm8k" / "test.executed.jsonl"
    ids = [p.problem_id for p in iter_spec_problems(TaskSpec("t", "gsm8k", "test", path))]
    folds = dict(zip(ids, assign_folds(ids, 3, 0)))
    seen = []
    for fold in range(3):
        role = {r: [p.problem_id for p in iter_spec_problems(
            TaskSpec("t", "gsm8k", "test", path, fold, r, 3, dev_fraction=0.34))] for r in ("train", "dev", "eval")}
        assert sorted(role["train"] + role["dev"] + role["eval"]) == sorted(ids)
        assert not set(role["dev"]) & set(role["eval"]) and not set(role["train"]) & set(role["eval"])
        assert role["dev"] and all(folds[i] != fold for i in role["dev"])
        assert all(folds[i] == fold for i in role["eval"])
        seen += role["eval"]
    assert sorted(seen) == sorted(ids)


def test_file_spec_splits_a_whole_file_into_train_and_dev():
    from lever_jax.inputs.examples import file_spec

    path = FIXTURES / "gsm8k" / "test.executed.jsonl"
    every = [p.problem_id for p in iter_spec_problems(file_spec(path))]
    train = [p.problem_id for p in iter_spec_problems(file_spec(path, "train", dev_fraction=0.5))]
    dev = [p.problem_id for p in iter_spec_problems(file_spec(path, "dev", dev_fraction=0.5))]
    assert file_spec(path).dataset == "gsm8k"
    assert dev and train and sorted(train + dev) == sorted(every) and not set(train) & set(dev)
    with pytest.raises(ValueError, match="fold_role"):
        TaskSpec("t", "gsm8k", "test", path, None, "eval")


@given(st.lists(st.integers(3, 300), max_size=40), st.integers(3, 30), st.sampled_from(["left", "right"]), st.booleans())
def test_frame_ids_fits_and_keeps_the_right_end(ids, length, side, with_bos):
    bos = 101 if with_bos else None
    out = frame_ids(ids, length, side, bos, 1)
    assert len(out) <= length and out[-1] == 1 and (out[0] == 101) == with_bos
    body = out[int(with_bos):-1]
    if len(ids) <= length - 1 - int(with_bos):
        assert body == ids
    else:
        assert body == (ids[len(ids) - len(body):] if side == "left" else ids[: len(body)])


def test_encode_example_features_and_left_truncation():
    tok = get_vocabulary("byte")
    ex = next(iter_examples(_spec("spider", "dev")))
    feats = encode_example(ex, tok, 32, "left", "encdec")
    assert feats["encoder_input_tokens"].shape == (32,) and feats["encoder_input_tokens"][-1] == tok.eos_id
    assert tok.decode(feats["encoder_input_tokens"]) == ex["inputs"][-31:]  # execution result kept
    assert feats["decoder_target_tokens"].tolist() == [tok.yes_id]
    assert feats["decoder_input_tokens"].tolist() == [0] and feats["label"] == 1
    enc = encode_example(ex, tok, 512, "left", "encoder")
    assert tok.decode(enc["input_tokens"]) == ex["inputs"] and "decoder_target_tokens" not in enc
    two = encode_example(ex, tok, 16, "right", "encdec", targets_eos=True)
    assert two["decoder_target_tokens"].tolist() == [tok.yes_id, tok.eos_id]
    assert two["decoder_input_tokens"].tolist() == [0, tok.yes_id]


def test_batch_features_fixed_length():
    tok = get_vocabulary("byte")
    feats = list(iter_features(_spec("wikitq", "test"), tok, 64))
    batches = list(batch_features(feats, 4))
    assert len(batches) == 2
    for b in batches:
        assert b["encoder_input_tokens"].shape == (4, 64) and b["decoder_target_tokens"].shape == (4, 1)
    assert batches[1]["example_mask"].tolist() == [True, False, False, False]
    assert len(list(batch_features(feats, 4, drop_remainder=True))) == 1


def test_problem_batcher_shapes_masks_and_sampling():
    tok = get_vocabulary("byte")
    batcher = ProblemBatcher.from_task(_spec("gsm8k", "test"), tok, 128, problems_per_batch=2, candidates_per_problem=3, seed=7)
    b = batcher.batch(0)
    assert b["input_tokens"].shape == (2, 3, 128) and b["candidate_mask"].shape == (2, 3)
    for row in range(2):
        p = batcher.problems[b["problem_index"][row]]
        k = int(b["candidate_mask"][row].sum())
        assert k == min(3, len(p.tokens))
        for col in range(k):
            cand = b["candidate_index"][row, col]
            ids = b["input_tokens"][row, col]
            assert ids[: len(p.tokens[cand])].tolist() == p.tokens[cand] and not ids[len(p.tokens[cand]):].any()
            assert b["labels"][row, col] == p.labels[cand]
            assert b["decoder_target_tokens"][row, col, 0] == (tok.yes_id if p.labels[cand] else tok.no_id)
        assert not b["input_tokens"][row, k:].any() and (b["result_ids"][row, k:] == -1).all()


def test_problem_batcher_is_deterministic_and_resumable():
    tok = get_vocabulary("byte")
    make = lambda seed: ProblemBatcher.from_task(_spec("gsm8k", "test"), tok, 96, 2, 2, seed=seed)  # noqa: E731
    a, b = make(1), make(1)
    run = [x for _, x in zip(range(7), a.iterate())]
    resumed = [x for _, x in zip(range(4), b.iterate(start_step=3))]
    for x, y in zip(run[3:], resumed):
        assert all(np.array_equal(x[k], y[k]) for k in x)
    # every epoch visits every problem once (3 problems, 2 per batch -> epochs chain across batches)
    visited = np.concatenate([x["problem_index"] for x in run[:3]])
    assert sorted(visited[:3].tolist()) == [0, 1, 2] and sorted(visited[3:6].tolist()) == [0, 1, 2]
    other = [x for _, x in zip(range(7), make(2).iterate())]
    assert any(not np.array_equal(x["problem_index"], y["problem_index"]) or not np.array_equal(x["candidate_index"], y["candidate_index"]) for x, y in zip(run, other))


def test_pure_layers_do_not_import_tensorflow():
    code = (
        "import sys; import lever_jax.inputs.batching, lever_jax.inputs.tokenizers, lever_jax.rerank.grouping, "
        "lever_jax.inputs.examples; bad = [m for m in ('tensorflow', 'seqio') if m in sys.modules]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_find_spec_and_bundled_pools():
    from lever_jax.inputs.examples import bundled_pools, find_spec

    pools = bundled_pools()
    if ("gsm8k_pool", "code002") in pools:
        spec = find_spec("lever_verify_gsm8k_pool_fold3_train")
        assert (spec.dataset, spec.split, spec.fold, spec.fold_role) == ("gsm8k", "code002", 3, "train")
        assert spec.is_training and not find_spec("lever_verify_gsm8k_pool_fold3_eval").is_training
    if ("humaneval_pool", "codegen16b") in pools:
        assert find_spec("lever_verify_humaneval_pool_fold0_eval").dataset == "humaneval"
    spider = find_spec("lever_verify_spider_dev", FIXTURES)
    assert spider.truncation_side == "right"  # LEVER cuts every dataset from the right
    assert spider.side(SerializeOptions(truncation="left_sql")) == "left"
    with pytest.raises(KeyError, match="no lever task"):
        find_spec("lever_verify_nothing", FIXTURES)


@pytest.mark.parametrize("name", ["gsm8k_pool", "humaneval"])
def test_gin_task_files_name_bundled_tasks(name):
    import gin

    from lever_jax.inputs.examples import bundled_pools, find_spec

    pool_dir = name if name.endswith("_pool") else f"{name}_pool"
    assert pool_dir in {d for d, _ in bundled_pools()}, f"{pool_dir} is not bundled"
    with gin.unlock_config():
        gin.parse_config_file(str(ROOT / "gin_configs" / "tasks" / f"{name}.gin"))
    try:
        roles = {}
        for macro in ("MIXTURE_OR_TASK_NAME", "DEV_MIXTURE_OR_TASK_NAME", "EVAL_MIXTURE_OR_TASK_NAME"):
            spec = find_spec(gin.query_parameter(f"{macro}/macro.value"))
            assert spec.fold == 0
            roles[macro] = spec.fold_role
        assert list(roles.values()) == ["train", "dev", "eval"]
    finally:
        gin.clear_config()


def test_problem_batcher_from_problems_matches_from_task():
    from lever_jax.inputs.batching import ProblemExamples, frame_examples, task_problems
    from lever_jax.inputs.examples import problem_examples

    tok = get_vocabulary("byte")
    spec = _spec("gsm8k", "test")
    problems = task_problems(spec, tok, 96)
    assert [p.index for p in problems] == [0, 1, 2] and all(isinstance(p, ProblemExamples) for p in problems)
    first = next(iter_spec_problems(spec))
    examples = problem_examples(first, 0)
    built = ProblemExamples.from_examples(0, examples, frame_examples(examples, tok, 96, spec.truncation_side))
    assert built.tokens == problems[0].tokens and built.labels.tolist() == [e["correct"] for e in examples]
    a = ProblemBatcher.from_task(spec, tok, 96, 2, 2, seed=3)
    b = ProblemBatcher(problems, tok, 96, 2, 2, seed=3)
    assert type(b) is ProblemBatcher and b.num_problems == 3
    for step in range(4):
        x, y = a.batch(step), b.batch(step)
        assert all(np.array_equal(x[k], y[k]) for k in x)
    assert len(task_problems(spec, tok, 96, max_problems=2)) == 2
    with pytest.raises(ValueError, match="at least one problem"):
        ProblemBatcher([], tok, 96, 2, 2)
    with pytest.raises(ValueError, match="longer than inputs_length"):
        ProblemBatcher(problems, tok, 16, 2, 2)
    with pytest.raises(ValueError, match="token lists"):
        ProblemExamples.from_examples(0, examples, [])


def test_spider_schema_option_from_gin(tmp_path):
    """gin ``serialize_options.include_schema`` (gin_configs/tasks/spider.gin) switches the schema on;
    a Spider file whose context has only ``db_id`` gets it from the bundled tables.json."""
    import gin

    from lever_jax.data.jsonl import read_problems, write_problems

    problems = list(read_problems(FIXTURES / "spider" / "dev.executed.jsonl", require_execution=True))
    (tmp_path / "spider").mkdir()
    write_problems(tmp_path / "spider" / "dev.executed.jsonl", [p.replace(context={"db_id": p.context["db_id"]}) for p in problems])
    spec = next(s for s in discover_specs(tmp_path, include_bundled=False) if s.name == "lever_verify_spider_dev")
    gin.clear_config()
    try:
        with gin.unlock_config():
            gin.parse_config_file(str(ROOT / "gin_configs" / "tasks" / "spider.gin"))
        assert not any("schema" in ex["inputs"] for ex in iter_examples(spec))
        with gin.unlock_config():
            gin.parse_config("serialize_options.include_schema = True")
        with_schema = list(iter_examples(spec))
        assert all(ex["inputs"].startswith("-- schema:|stadium: Stadium_ID, Location,") for ex in with_schema[:4])
        assert "| singer_in_concert: concert_ID, Singer_ID|-- question: How many singers" in with_schema[0]["inputs"]
    finally:
        gin.clear_config()


def test_bundled_pool_tasks_train_on_the_inference_format():
    """The GSM8k pool tasks read `lever-jax execute`'s result text (LEVER's final-locals dict),
    never the recorded-answer placeholders (`answer = 18.0`)."""
    import itertools

    from lever_jax.inputs.examples import find_spec, iter_spec_problems

    spec = find_spec("lever_verify_gsm8k_pool_fold0_train")
    assert spec.path.name == "code002.executed.jsonl.gz"
    ok = [c.execution for p in itertools.islice(iter_spec_problems(spec), 20) for c in p.candidates
          if c.execution.status == "ok"]
    assert ok and all(e.result_text.startswith("{") and not (e.details or {}).get("recorded") for e in ok)
