"""Why a checkpoint does not fit the model a command builds, as one line.

`lever-jax eval` (or a resumed `train`) with another model file than training's used to exit 1 with
orbax's several-hundred-character tree mismatch. Training writes its operative config to
MODEL_DIR/config.gin; this compares that file's model class, model-config fields and vocabulary
with the model built now and names what differs.
"""
from __future__ import annotations

import ast
import dataclasses
import re
from typing import Any

import gin

from lever_jax.data import paths
from lever_jax.data.errors import UserError
from lever_jax.models.base import VerifierModel

_MODEL_LINE = re.compile(r"^MODEL\s*=\s*@(?:[\w.]+\.)?(?P<cls>\w+)\(\)\s*$")
_FIELD_LINE = re.compile(r"^(?:\S+/)?(?:[\w.]+\.)?(?P<cls>\w+Config)\.(?P<field>\w+)\s*=\s*(?P<value>.+?)\s*$")
_MACRO_LINE = re.compile(r"^(?P<name>[A-Z][A-Z0-9_]*)\s*=\s*(?P<value>.+?)\s*$")
_MAX_LISTED = 4


def _value(text: str, macros: dict[str, str]) -> Any:
    """A gin value as Python (a ``%MACRO`` resolved through ``macros``); ``...`` when not a literal."""
    for _ in range(8):
        if not text.startswith("%") or text[1:] not in macros:
            break
        text = macros[text[1:]]
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return ...


def trained_settings(config_gin: str) -> tuple[str | None, dict[str, dict[str, Any]], Any]:
    """(model class, {config class: {field: value}}, vocabulary name) that ``config_gin`` records."""
    lines = [line.strip() for line in config_gin.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    macros = {m["name"]: m["value"] for line in lines if (m := _MACRO_LINE.match(line))}
    model = next((m["cls"] for line in lines if (m := _MODEL_LINE.match(line))), None)
    fields: dict[str, dict[str, Any]] = {}
    for line in lines:
        if (m := _FIELD_LINE.match(line)) is not None:
            fields.setdefault(m["cls"], {})[m["field"]] = _value(m["value"], macros)
    vocabulary = _value(macros["VOCABULARY_NAME"], macros) if "VOCABULARY_NAME" in macros else ...
    return model, fields, vocabulary


def _current_vocabulary() -> Any:
    try:
        return gin.query_parameter("VOCABULARY_NAME/macro.value")
    except (ValueError, KeyError):
        return ...


def differences(config_gin: str, model: VerifierModel) -> list[str]:
    """What differs between the training's config.gin and ``model`` ("FIELD X there, Y here")."""
    trained_model, fields, trained_vocab = trained_settings(config_gin)
    if trained_model is not None and trained_model != type(model).__name__:
        return [f"model {trained_model} there, {type(model).__name__} here"]
    out = []
    vocab = _current_vocabulary()
    if ... not in (trained_vocab, vocab) and trained_vocab != vocab:
        out.append(f"VOCABULARY_NAME {trained_vocab!r} there, {vocab!r} here")
    config = model.config
    trained = fields.get(type(config).__name__, {}) if dataclasses.is_dataclass(config) else {}
    for field in dataclasses.fields(config) if trained else ():
        then, now = trained.get(field.name, ...), getattr(config, field.name)
        if then is not ... and then is not None and then != now:  # None: set from the vocabulary
            out.append(f"{field.name} {then!r} there, {now!r} here")
    return out


def checkpoint_mismatch(model_dir: str, model: VerifierModel, step: int, err: BaseException) -> UserError:
    """The one-line error for a checkpoint under ``model_dir`` that did not restore into ``model``."""
    config = paths.join(model_dir, "config.gin")
    found = differences(paths.read_text(config), model) if paths.exists(config) else []
    if found:
        listed = "; ".join(found[:_MAX_LISTED]) + (f"; and {len(found) - _MAX_LISTED} more" if len(found) > _MAX_LISTED else "")
        return UserError(f"{model_dir}: trained with another model ({listed}; 'there' is {config}): "
                         "pass the training's model file and model bindings")
    first = str(err).strip().splitlines()[0][:200] if str(err).strip() else type(err).__name__
    return UserError(f"{model_dir}: the checkpoint of step {step} does not fit the model and optimizer these gin "
                     f"files build (train with the same files: {config}): {first}")
