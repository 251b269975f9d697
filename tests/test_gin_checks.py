"""Gin mistakes become one-line UserErrors naming file:line; unused / undefined macros are errors."""
from __future__ import annotations

from pathlib import Path

import gin
import pytest

from lever_jax.data.errors import UserError
from lever_jax.training.gin_checks import gin_user_error, macros_referenced_in, parse_gin_config


@gin.configurable
def gck_train(model_dir: str = gin.REQUIRED, steps: int = 1, model: object = None) -> int:
    return steps


@pytest.fixture(autouse=True)
def _clean_gin():
    gin.clear_config()
    yield
    gin.clear_config()


def _parse(tmp_path: Path, text: str, bindings: tuple[str, ...] = ()) -> None:
    path = tmp_path / "c.gin"
    path.write_text("# a comment\n" + text)
    parse_gin_config([str(path)], list(bindings))


@pytest.mark.parametrize("text, line, expected", [
    ("gck_train.steps 3\n", 2, "expected ':' or '='"),
    ("gck_trian.steps = 3\n", 2, "did you mean gck_train?"),
    ("gck_train.stepss = 3\n", 2, "did you mean steps?"),
    ("gck_train.steps = foo\n", 2, "cannot parse value 'foo'"),
    ("gck_train.model = @Nope()\n", 2, "No configurable matching reference"),
    ("import no_such_module_xyz\n", 2, "No module named"),
    ("include 'no_such.gin'\n", 2, "gin file not found"),
    ("gck_train.steps = (1,\n", 3, "unclosed bracket"),
    ("STEPS = 3\nSTEPSS = 4\ngck_train.steps = %STEPS\ngck_train.model_dir = 'x'\n", 3,
     "macro STEPSS is defined but no binding uses it (did you mean STEPS?)"),
    ("M = %gin.REQUIRED\ngck_train.model_dir = %M\n", 2, "macro M is %gin.REQUIRED"),
])
def test_file_mistakes_name_file_and_line(tmp_path, text, line, expected):
    with pytest.raises(UserError) as info:
        _parse(tmp_path, text)
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 'c.gin'}:{line}: "), message
    assert expected in message
    assert "\n" not in message


def test_misspelt_macro_in_bindings_is_named_with_suggestion(tmp_path):
    with pytest.raises(UserError, match=r"--gin_bindings 'TRAIN_STEPSS=3': macro TRAIN_STEPSS .*"
                                        r"did you mean TRAIN_STEPS\?"):
        _parse(tmp_path, "TRAIN_STEPS = %gin.REQUIRED\ngck_train.steps = %TRAIN_STEPS\n"
                         "gck_train.model_dir = 'x'\n", ("TRAIN_STEPS = 2", "TRAIN_STEPSS=3"))


def test_undefined_macro_names_the_binding(tmp_path):
    with pytest.raises(UserError, match=r"gin binding gck_train.steps: macro %STEPZ is used but never "
                                        r"defined \(did you mean %STEPS\?\)"):
        _parse(tmp_path, "STEPS = 2\ngck_train.steps = %STEPZ\ngck_train.model_dir = %STEPS\n")


def test_macros_used_only_by_other_macros_count_when_those_are_used(tmp_path):
    _parse(tmp_path, "A = 3\nB = %A\ngck_train.steps = %B\ngck_train.model_dir = 'x'\n")
    assert gck_train() == 3


def test_macro_used_only_by_an_unused_macro_is_unused(tmp_path):
    with pytest.raises(UserError, match="macro A is defined but no binding uses it .also unused: B"):
        _parse(tmp_path, "A = 3\nB = %A\ngck_train.model_dir = 'x'\n")


def test_allow_unused_and_macros_referenced_in(tmp_path):
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "other.gin").write_text("gck_train.steps = %ONLY_OTHER\n")
    allowed = macros_referenced_in(tmp_path / "runs")
    assert allowed == {"ONLY_OTHER"}
    path = tmp_path / "c.gin"
    path.write_text("ONLY_OTHER = 5\ngck_train.model_dir = 'x'\n")
    parse_gin_config([str(path)], [], allow_unused=allowed)
    assert gck_train() == 1


def test_bindings_syntax_error_is_one_line():
    with pytest.raises(UserError) as info:
        parse_gin_config([], ["gck_train.stepx = 3"])
    assert str(info.value).startswith('--gin_bindings "gck_train.stepx = 3": ')
    assert "did you mean steps?" in str(info.value)


def test_missing_required_binding_at_call_time_maps_to_user_error():
    parse_gin_config([], ["gck_train.steps = 3"])
    with pytest.raises(RuntimeError) as info:
        gck_train()
    user = gin_user_error(info.value)
    assert user is not None and "Required bindings for `gck_train`" in str(user) and "model_dir" in str(user)


def test_failure_inside_a_configurable_is_not_a_user_error():
    @gin.configurable
    def gck_boom(x: int = 1) -> None:
        raise ValueError("a bug, not a config mistake")

    parse_gin_config([], ["gck_boom.x = 2"])
    with pytest.raises(ValueError) as info:
        gck_boom()
    assert gin_user_error(info.value) is None


def test_plain_gin_parse_required_macro_error_maps_with_suggestion():
    """The dispatcher path (gin parsed without parse_gin_config): gin's finalize error -> one line."""
    with pytest.raises(ValueError) as info:
        gin.parse_config_files_and_bindings([], ["TRAIN_STEPS = %gin.REQUIRED",
                                                 "gck_train.steps = %TRAIN_STEPS", "TRAIN_STEPSS = 3"])
    user = gin_user_error(info.value, bindings=["TRAIN_STEPS = %gin.REQUIRED"])
    assert str(user) == ("--gin_bindings 'TRAIN_STEPS = %gin.REQUIRED': macro TRAIN_STEPS is %gin.REQUIRED "
                         "and no gin file or --gin_bindings sets it "
                         "(is TRAIN_STEPSS, which no binding uses, a misspelling of it?)")
