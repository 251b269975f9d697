"""Gin files as users combine them: run + model + task files in any order build the model the
model file names (parameter counts against Hugging Face's), with the vocabulary it names."""
from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import gin
import pytest

from lever_jax.data.errors import UserError
from lever_jax.inputs.tokenizers import get_vocabulary
from lever_jax.training import launch, runs

ROOT = Path(__file__).resolve().parent.parent
MODEL_FILES = sorted(p.name for p in (ROOT / "gin_configs" / "models").glob("*.gin"))
# Hugging Face's counts, measured with transformers 5.24 on the meta device (no weights):
# T5ForConditionalGeneration(t5-base / t5-large config), RobertaForSequenceClassification(roberta-large,
# num_labels=2); google/t5-v1_1-small untied = 60,511,616 tied + 32128 x 512 lm_head; all-MiniLM-L6-v2
# BertModel without pooler 22,565,376 + our 2-way head (384 x 2 + 2).
HF_COUNTS = {
    "t5_base.gin": (["VOCAB_SIZE = 32128"], 222_903_552),
    "t5_large.gin": (["VOCAB_SIZE = 32128"], 737_668_096),
    "t5_small.gin": (["VOCAB_SIZE = 32128"], 76_961_152),
    "roberta_large.gin": (["VOCAB_SIZE = 50265"], 355_361_794),
    "minilm.gin": ([], 22_566_146),
}


def parse(files: list[str], bindings: list[str] = (), command: str = "train") -> None:
    gin.clear_config()
    flags = launch.add_train_flags if command == "train" else launch.add_eval_flags
    parser = flags(argparse.ArgumentParser(prog=f"lever-jax {command}"))
    args = parser.parse_args([a for f in files for a in ("--gin_file", f)]
                             + [a for b in ["MODEL_DIR = '/tmp/unused'", *bindings] for a in ("--gin_bindings", b)])
    launch.parse_gin(args)


def value(binding: str):
    """The value gin passes for ``binding`` (macros and references evaluated)."""
    ref = gin.query_parameter(binding)
    return ref.scoped_configurable_fn() if isinstance(ref, gin.config.ConfigurableReference) else ref


@pytest.fixture(autouse=True)
def _clean_gin():
    yield
    gin.clear_config()


@pytest.mark.slow
@pytest.mark.parametrize("name", MODEL_FILES)
def test_every_model_file_builds_through_the_train_path(name):
    extra, want = HF_COUNTS.get(name, ([], None))
    parse(["gin_configs/runs/train.gin", f"gin_configs/models/{name}", "gin_configs/tasks/gsm8k_pool.gin"], extra)
    tok = get_vocabulary()
    model = runs.configured_model(runs.gin_model("train"), tok)
    count = model.num_parameters()
    if want is not None:
        assert count == want, (name, count)
    assert model.config.vocab_size >= tok.vocab_size
    if hasattr(model.config, "yes_token_id"):
        assert (model.config.no_token_id, model.config.yes_token_id) == (tok.no_id, tok.yes_id)


def test_file_order_does_not_matter():
    files = ["gin_configs/runs/train.gin", "gin_configs/models/t5_tiny.gin", "gin_configs/tasks/gsm8k_pool.gin"]
    seen = set()
    for order in itertools.permutations(files):
        parse(list(order))
        model = runs.configured_model(runs.gin_model("train"), get_vocabulary())
        seen.add((model.describe(), value("TrainDataConfig.task"), value("TrainDataConfig.problems_per_batch"),
                  value("TrainDataConfig.dev_task"), get_vocabulary().spec))
    assert len(seen) == 1, seen
    (desc, task, batch, dev, vocab), = seen
    assert "d_model 64" in desc and task == "lever_verify_gsm8k_pool_fold0_train" and vocab == "spm"
    assert (batch, dev) == (32, "lever_verify_gsm8k_pool_fold0_dev")  # LEVER's GSM8k: 32 problems per step


def test_model_file_vocabulary_is_the_one_used():
    parse(["gin_configs/runs/train.gin", "gin_configs/models/minilm.gin", "gin_configs/tasks/gsm8k_pool.gin"])
    assert get_vocabulary().spec == "minilm"
    parse(["gin_configs/runs/eval.gin", "gin_configs/models/t5_tiny.gin", "gin_configs/tasks/gsm8k_pool.gin"],
          command="eval")
    assert get_vocabulary().spec == "spm"
    assert runs.configured_model(runs.gin_model("evaluate"), get_vocabulary()).describe()


def test_vocabulary_mismatch_is_a_user_error():
    parse(["gin_configs/runs/train.gin", "gin_configs/models/t5_tiny.gin", "gin_configs/tasks/gsm8k_pool.gin"],
          ["VOCAB_SIZE = 100"])
    with pytest.raises(UserError, match="VOCAB_SIZE"):
        runs.configured_model(runs.gin_model("train"), get_vocabulary())
    parse(["gin_configs/runs/train.gin", "gin_configs/models/minilm.gin", "gin_configs/tasks/gsm8k_pool.gin"],
          ["VOCABULARY_NAME = 'spm'"])
    with pytest.raises(UserError):
        runs.configured_model(runs.gin_model("train"), get_vocabulary())


def test_gin_mistakes_are_one_line_user_errors(tmp_path):
    bad = tmp_path / "bad.gin"
    bad.write_text("train.nonexistent_param = 3\n")
    with pytest.raises(UserError) as err:
        parse([str(bad)])
    assert "\n" not in str(err.value) and "nonexistent_param" in str(err.value)
    with pytest.raises(UserError):
        parse(["gin_configs/runs/no_such_file.gin"])


def test_data_flags_become_file_bindings(tmp_path):
    parser = launch.add_eval_flags(argparse.ArgumentParser(prog="anything"))
    args = parser.parse_args(["--input", "x.executed.jsonl", "--output", "s.json"])
    assert launch.data_bindings(args) == ["EVAL_FILE = 'x.executed.jsonl'", "EVAL_MIXTURE_OR_TASK_NAME = None",
                                        "evaluate.output = 's.json'"]
    parser = launch.add_train_flags(argparse.ArgumentParser(prog="anything"))
    args = parser.parse_args(["--train_file", "t.jsonl", "--dev_file", "d.jsonl"])
    assert launch.data_bindings(args)[0] == "TRAIN_FILE = 't.jsonl'"


def test_flag_sets_are_explicit_not_taken_from_the_program_name(capsys):
    """Each command has its own flags whatever the parser is called: eval has no --train_file,
    train no --input (argparse: exit 2)."""
    for flags, foreign in ((launch.add_eval_flags, "--train_file"), (launch.add_train_flags, "--input")):
        parser = flags(argparse.ArgumentParser(prog="lever-jax train eval"))
        with pytest.raises(SystemExit) as exit_info:
            parser.parse_args([foreign, "x"])
        assert exit_info.value.code == 2
    assert launch.add_train_flags(argparse.ArgumentParser()).parse_args([]).func is launch.run_train
    assert launch.add_eval_flags(argparse.ArgumentParser()).parse_args([]).func is launch.run_evaluate


@pytest.mark.parametrize("binding, line", [
    ("train.train_task = 'x'", "train.train_task moved: bind TrainDataConfig.task instead"),
    ("train.checkpoint_every = 5", "train.checkpoint_every moved: bind CheckpointConfig.every instead"),
    ("evaluate.eval_batch_size = 8", "evaluate.eval_batch_size moved: bind ScoringConfig.batch_size instead"),
    ("make_partitioning.strategy = 'fsdp'", "make_partitioning.strategy moved: bind PartitionConfig.strategy instead"),
])
def test_moved_bindings_are_one_line_naming_the_new_name(capsys, tmp_path, binding, line):
    """A binding of a setting that moved into a config group (lever_jax.training.configs.MOVED):
    one line naming the new binding, exit 2 -- on the command line and in a user's gin file."""
    from lever_jax.cli.main import main

    smoke = str(ROOT / "gin_configs/runs/smoke.gin")
    assert main(["train", "--gin_file", smoke, "--gin_bindings", "MODEL_DIR = '/tmp/unused'",
                 "--gin_bindings", binding]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f'lever-jax: error: --gin_bindings "{binding}": {line}'], err
    gin.clear_config()
    mine = tmp_path / "mine.gin"
    mine.write_text(f"include '{smoke}'\n{binding}\n")
    assert main(["eval", "--gin_file", str(mine), "--gin_bindings", "MODEL_DIR = '/tmp/unused'"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"lever-jax: error: {mine}:2: {line}"], err


def test_every_moved_name_is_gone_and_its_new_name_exists():
    """MOVED's old names are no longer parameters (binding them fails) and its new names are."""
    import dataclasses
    import inspect

    from lever_jax.training import configs

    groups = {cls.__name__: cls for cls in (configs.TrainDataConfig, configs.EvalDataConfig, configs.TrainLoopConfig,
                                            configs.CheckpointConfig, configs.ScoringConfig, configs.PartitionConfig)}
    functions = {"train": runs.train, "evaluate": runs.evaluate}
    for old, new in configs.MOVED.items():
        owner, name = old.split(".")
        if owner in functions:
            assert name not in inspect.signature(functions[owner]).parameters, old
        group, field = new.split(".")
        assert field in {f.name for f in dataclasses.fields(groups[group])}, new
    assert len(inspect.signature(runs.train).parameters) <= 10
    assert len(inspect.signature(runs.evaluate).parameters) <= 10
