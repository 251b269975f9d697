"""SeqIO tasks (TensorFlow): registration, identical ids with the numpy path, feature converters,
decoding back to the input text, and a seqio evaluation against the reference reranker."""
from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("LEVER_JAX_NO_AUTO_REGISTER", "1")
tf = pytest.importorskip("tensorflow")
seqio = pytest.importorskip("seqio")

import gin  # noqa: E402

from lever_jax.rerank import scoring  # noqa: E402
from lever_jax.data.arrays import problems_to_arrays  # noqa: E402
from lever_jax.data.jsonl import read_problems  # noqa: E402
from lever_jax.seqio.feature_converters import feature_converter  # noqa: E402
from lever_jax.inputs.batching import encode_example  # noqa: E402
from lever_jax.rerank.grouping import make_rerank_metric_fn  # noqa: E402
from lever_jax.inputs.examples import bundled_pool_files, iter_examples  # noqa: E402
from lever_jax.inputs.tokenizers import get_vocabulary  # noqa: E402
from tasks import lever_tasks  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures" / "executed"
ROOT = Path(__file__).resolve().parents[1]
FIXTURE_TASKS = [
    "lever_verify_gsm8k_test",
    "lever_verify_gsm8k_train",
    "lever_verify_mbpp_test",
    "lever_verify_humaneval_test",
    "lever_verify_spider_dev",
    "lever_verify_wikitq_test",
]


@pytest.fixture(scope="module", autouse=True)
def registered():
    names = lever_tasks.register_lever_tasks(data_dir=str(FIXTURES))
    yield names
    gin.clear_config()


@pytest.fixture
def vocab(request):
    with gin.unlock_config():
        gin.parse_config(f"get_vocabulary.name = '{request.param}'")
    yield get_vocabulary()
    gin.clear_config()


def _seqio_features(name: str, lengths: dict[str, int], model: str = "encdec") -> list[dict[str, np.ndarray]]:
    task = seqio.get_mixture_or_task(name)
    ds = task.get_dataset(lengths, split="validation", shuffle=False)
    conv = feature_converter(model)
    conv_lengths = lengths if model == "encdec" else {"inputs": lengths["inputs"]}
    return list(conv(ds, conv_lengths).as_numpy_iterator())


def test_registration(registered):
    for name in FIXTURE_TASKS:
        assert name in registered and seqio.get_mixture_or_task(name).name == name
    mixture = seqio.get_mixture_or_task(lever_tasks.TRAIN_MIXTURE)
    assert [t.name for t in mixture.tasks] == ["lever_verify_gsm8k_train"]
    assert bundled_pool_files(), "the bundled GSM8k pool is missing"
    for fold in range(5):
        for role in ("train", "eval"):
            assert f"lever_verify_gsm8k_pool_fold{fold}_{role}" in registered
    assert "lever_verify_gsm8k_pool_other_llms_fold4_eval" in registered
    names = set(registered)
    assert all(n.startswith("lever_verify_") for n in names)
    assert not any(n.endswith("_fold5_eval") for n in names)
    assert lever_tasks.spec_of("lever_verify_spider_dev").truncation_side == "right"
    with pytest.raises(KeyError, match="no lever task"):
        lever_tasks.spec_of("lever_verify_nope")


IDENTITY_CASES = [("byte", name) for name in FIXTURE_TASKS] + [
    ("spm", "lever_verify_spider_dev"),
    ("spm", "lever_verify_gsm8k_test"),
    ("minilm", "lever_verify_wikitq_test"),
    ("minilm", "lever_verify_humaneval_test"),
]


@pytest.mark.slow
@pytest.mark.parametrize("vocab,name", IDENTITY_CASES, indirect=["vocab"])
def test_seqio_and_numpy_give_identical_features(vocab, name):
    spec = lever_tasks.spec_of(name)
    model = "encoder" if vocab.spec == "minilm" else "encdec"
    length = 48  # short enough that most inputs are truncated (on the dataset's side)
    got = _seqio_features(name, {"inputs": length, "targets": 1}, model)
    want = [encode_example(ex, vocab, length, spec.truncation_side, model) for ex in iter_examples(spec)]
    assert len(got) == len(want) > 0
    for g, w in zip(got, want):
        assert set(g) == set(w)
        for key in w:
            assert np.array_equal(g[key], w[key]), (name, key, g[key], w[key])
            assert g[key].dtype == w[key].dtype, key


@pytest.mark.parametrize("vocab", ["byte", "spm", "minilm"], indirect=True)
def test_decode_back_to_input_text(vocab):
    for name in ("lever_verify_spider_dev", "lever_verify_mbpp_test"):
        task = seqio.get_mixture_or_task(name)
        ds = task.get_dataset({"inputs": 2048, "targets": 1}, split="validation", shuffle=False)
        for ex in ds.as_numpy_iterator():
            text = ex["inputs_pretokenized"].decode("utf-8")
            decoded = task.output_features["inputs"].vocabulary.decode(ex["inputs"].tolist())
            expected = text if vocab.spec != "minilm" else vocab.decode(vocab.encode(text))  # WordPiece lower-cases
            assert decoded == expected
            assert ex["targets"].tolist() == [vocab.yes_id if ex["targets_pretokenized"] == b"yes" else vocab.no_id]


@pytest.mark.parametrize("vocab", ["byte"], indirect=True)
def test_feature_converters_give_fixed_length_batches(vocab):
    for model, keys in (("encdec", ("encoder_input_tokens", "decoder_target_tokens")), ("encoder", ("input_tokens",))):
        task = seqio.get_mixture_or_task("lever_verify_mbpp_test")
        lengths = {"inputs": 96, "targets": 2}
        ds = task.get_dataset(lengths, split="train", shuffle=False)
        conv = feature_converter(model)
        batches = list(conv(ds, lengths if model == "encdec" else {"inputs": 96}).batch(4, drop_remainder=True).as_numpy_iterator())
        assert len(batches) == 1
        b = batches[0]
        assert b[keys[0]].shape == (4, 96) and b["label"].shape == (4,) and b["gen_logprob"].dtype == np.float32
        if model == "encdec":
            assert b["decoder_target_tokens"].shape == (4, 2)
            assert (b["decoder_target_tokens"][:, 1] == 0).all()  # no EOS unless targets_eos
            assert (b["decoder_input_tokens"][:, 0] == 0).all()
    with pytest.raises(ValueError, match="packing"):
        feature_converter("encdec").__class__(pack=True)


@pytest.mark.parametrize("vocab", ["byte"], indirect=True)
def test_targets_eos_option(vocab):
    spec = lever_tasks.spec_of("lever_verify_wikitq_test")
    lever_tasks.register_task(spec, targets_eos=True, name="lever_verify_wikitq_test_eos")
    ds = seqio.get_mixture_or_task("lever_verify_wikitq_test_eos").get_dataset({"inputs": 64, "targets": 2}, shuffle=False)
    first = next(ds.as_numpy_iterator())
    assert first["targets"].tolist() == [vocab.yes_id, vocab.eos_id]
    seqio.TaskRegistry.remove("lever_verify_wikitq_test_eos")


def _fixed_scores(problems) -> dict[tuple[int, int], float]:
    """A deterministic log P(yes) per candidate: sometimes right, sometimes wrong."""
    out = {}
    for p, problem in enumerate(problems):
        for c, cand in enumerate(problem.candidates):
            prob = 0.8 if cand.execution.correct != ((p + c) % 3 == 0) else 0.3
            out[(p, c)] = math.log(prob)
    return out


@pytest.mark.parametrize("vocab", ["byte"], indirect=True)
@pytest.mark.parametrize("name,through_evaluator", [("lever_verify_gsm8k_test", True), ("lever_verify_mbpp_test", False)])
def test_seqio_evaluation_matches_reference_reranker(vocab, name, through_evaluator):
    spec = lever_tasks.spec_of(name)
    problems = list(read_problems(spec.path, require_execution=True))
    yes = _fixed_scores(problems)

    def score_fn(ds):
        out = []
        for index, ex in ds.as_numpy_iterator():
            log_yes = yes[(int(ex["problem_index"]), int(ex["candidate_index"]))]
            # seqio scores are the target's log-likelihood under the 2-way yes/no softmax
            out.append((index, log_yes if ex["label"] else math.log1p(-math.exp(log_yes))))
        return out

    if through_evaluator:  # the full seqio.Evaluator (one task: it is slow to build)
        evaluator = seqio.Evaluator(
            mixture_or_task_name=name,
            feature_converter=feature_converter("encdec"),
            eval_split="validation",
            sequence_length={"inputs": 64, "targets": 1},
            use_memory_cache=False,
        )
        metrics, _ = evaluator.evaluate(compute_metrics=True, score_fn=score_fn, step=0)
        got = metrics.result()[name]
        got = {k: float(np.asarray(getattr(v, "value", v))) for k, v in got.items()}
    else:  # the task's own postprocess_fn + metric fn on the source examples (count fallback path)
        task = seqio.get_mixture_or_task(name)
        targets = [task.postprocess_fn(ex["targets"], example=ex, is_target=True) for ex in iter_examples(spec)]
        feats = [dict(problem_index=t["problem_index"], candidate_index=t["candidate_index"], label=t["label"]) for t in targets]
        scores = [s for _, s in score_fn(_Enumerated(feats))]
        got = task.metric_fns[0](targets=targets, scores=scores)

    # Reference: lever_jax.rerank.scoring.rerank_reference (numpy loops) on the executed file itself.
    arrays = problems_to_arrays(problems)
    gen = arrays.gen_logprob.astype(np.float64)
    if not arrays.has_logprobs:
        gen = np.asarray(scoring.frequency_logprob(arrays.counts, arrays.mask), np.float64)
    elif spec.dataset == "gsm8k":
        gen = gen / np.maximum(arrays.num_tokens, 1)  # LEVER's norm_gen_prob for GSM8k
    ver = np.full(arrays.mask.shape, 0.0)
    for (p, c), v in yes.items():
        ver[p, c] = v
    cases = (
        (dict(aggregate=False), "rerank_acc"),
        (dict(aggregate=True), "summing_agg_rerank_acc"),
        (dict(voting=True, gate_threshold=0.5), "voting_agg_rerank_acc"),
    )
    for kwargs, key in cases:
        choice = scoring.rerank_reference(gen, ver, arrays.result_ids, arrays.mask, **kwargs).choice
        assert got[key] == pytest.approx(arrays.correct[np.arange(len(problems)), choice].mean()), key
    oracle = arrays.correct.any(1).mean()
    assert got["oracle_acc"] == pytest.approx(oracle) and got["num_problems"] == len(problems)
    assert 0.0 <= got["binary_acc"] <= 1.0


class _Enumerated:
    def __init__(self, items):
        self.items = items

    def as_numpy_iterator(self):
        return enumerate(self.items)


def test_metric_grouping_is_order_independent():
    targets = [
        dict(problem_index=p, candidate_index=c, gen_logprob=-float(c), result_id=c % 2, correct=int(c == 1), count=1, num_tokens=0, has_gen_logprob=1)
        for p in range(3)
        for c in range(3)
    ]
    scores = [math.log(0.9 if t["candidate_index"] == 1 else 0.2) for t in targets]
    metric = make_rerank_metric_fn(scores_are="yes")
    a = metric(targets, scores)
    order = np.random.default_rng(0).permutation(len(targets))
    b = metric([targets[i] for i in order], [scores[i] for i in order])
    assert a == b and a["rerank_acc"] == 1.0 and a["max_gen_prob_acc"] == 0.0 and a["binary_acc"] == 1.0


@pytest.mark.parametrize("vocab", ["spm"], indirect=True)
def test_bundled_pool_fold_task(vocab):
    assert bundled_pool_files(), "the bundled GSM8k pool is missing"
    name = "lever_verify_gsm8k_pool_fold0_eval"
    spec = lever_tasks.spec_of(name)
    task = seqio.get_mixture_or_task(name)
    ds = task.get_dataset({"inputs": 512, "targets": 1}, split="validation", shuffle=False).take(40)
    conv = feature_converter("encdec")(ds, {"inputs": 512, "targets": 1})
    examples = iter_examples(spec)
    for got, raw in zip(conv.as_numpy_iterator(), examples):
        want = encode_example(raw, vocab, 512, "right", "encdec")
        assert all(np.array_equal(got[k], want[k]) for k in want)
    first = next(ds.as_numpy_iterator())
    assert vocab.decode(first["inputs"]) == first["inputs_pretokenized"].decode("utf-8")[: len(vocab.decode(first["inputs"]))]


def test_gin_task_files_parse():
    files = sorted((ROOT / "gin_configs" / "tasks").glob("*.gin"))
    assert {f.stem for f in files} >= {"gsm8k", "gsm8k_pool", "mbpp", "humaneval", "spider", "wikitq"}
    for path in files:  # task files name data only: the vocabulary is the model file's
        with gin.unlock_config():
            gin.parse_config_file(str(path))
            assert "VOCABULARY_NAME" not in gin.config_str() and "get_vocabulary" not in gin.config_str()
            assert isinstance(gin.query_parameter("TASK_FEATURE_LENGTHS/macro.value"), dict)
        gin.clear_config()


@pytest.mark.parametrize("switch", ["gin", "argument"])
def test_spider_schema_option(tmp_path, switch):
    """The Spider schema (bundled tables.json, by db_id) reaches the SeqIO task's inputs when
    switched on by gin (``serialize_options.include_schema``) or by ``register_task(options=...)``."""
    from lever_jax.data.jsonl import write_problems
    from lever_jax.inputs.serialize import SerializeOptions
    from lever_jax.inputs.examples import discover_specs

    problems = list(read_problems(FIXTURES / "spider" / "dev.executed.jsonl", require_execution=True))
    (tmp_path / "spider").mkdir()
    write_problems(tmp_path / "spider" / "dev.executed.jsonl", [p.replace(context={"db_id": p.context["db_id"]}) for p in problems])
    spec = next(s for s in discover_specs(tmp_path, include_bundled=False) if s.name == "lever_verify_spider_dev")
    name = f"lever_verify_spider_dev_schema_{switch}"

    def first_inputs() -> str:
        task = seqio.get_mixture_or_task(name)
        ds = task.get_dataset({"inputs": 256, "targets": 1}, split="validation", shuffle=False)
        return next(ds.as_numpy_iterator())["inputs_pretokenized"].decode("utf-8")

    with gin.unlock_config():
        gin.parse_config("get_vocabulary.name = 'byte'")
    try:
        lever_tasks.register_task(spec, name=name)
        assert first_inputs().startswith("-- question: How many singers do we have?|")
        if switch == "gin":
            with gin.unlock_config():
                gin.parse_config("serialize_options.include_schema = True")
        else:
            lever_tasks.register_task(spec, options=SerializeOptions(include_schema=True), name=name)
        assert first_inputs().startswith("-- schema:|stadium: Stadium_ID, Location, Name,")
    finally:
        seqio.TaskRegistry.remove(name)
        gin.clear_config()
