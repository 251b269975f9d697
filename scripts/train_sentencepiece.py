#!/usr/bin/env python
"""Train the bundled SentencePiece vocabulary on verifier training inputs (offline, deterministic).

Corpus (in this order, one "sentence" per item; newlines kept inside items):
  1. the serialized verifier inputs (lever_jax.inputs.serialize, default options) and the yes/no target of
     every candidate in the bundled GSM8k pools (lever_jax/data/bundled/gsm8k_pool/*.executed.jsonl.gz);
  2. question + gold program of every problem of the bundled datasets named by --datasets
     (lever_jax.data.datasets; default gsm8k, mbpp, humaneval: every split of each);
  3. any extra executed files given with --executed.
Model: unigram, byte_fallback (no unknown characters), identity normalisation and no whitespace
folding (code indentation and every character survive a round trip), '\\n' as its own piece,
digits split, ids pad=0 eos=1 unk=2 and no bos (T5 conventions, matching seqio).

Writes <out_dir>/<name>.model, <name>.vocab and <name>.json (corpus statistics and sha256,
options, sentencepiece version). Usage:
  .venv/bin/python scripts/train_sentencepiece.py [--vocab_size 8000] [--out_dir lever_jax/data/bundled/vocab]
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
from pathlib import Path
from typing import Iterator

from lever_jax.data import read_problems, write_json
from lever_jax.inputs.serialize import serialize, target_text
from lever_jax.inputs import bundled_pool_files

ROOT = Path(__file__).resolve().parents[1]


def executed_inputs(path: Path) -> Iterator[str]:
    for problem in read_problems(path, require_execution=True):
        for cand in problem.candidates:
            yield serialize(problem, cand)
            yield target_text(cand)  # the decoder's yes/no targets are training text too


def dataset_texts(names: list[str]) -> Iterator[str]:
    from lever_jax.data import datasets

    for name in names:
        try:
            module = datasets.dataset_module(name)
            splits = list(module.SPLITS)
        except Exception as err:  # a loader missing or not yet written: skip it, say so
            print(f"skip dataset {name}: {err}", file=sys.stderr)
            continue
        for split in splits:
            try:
                problems = datasets.load_problems(name, split)
            except Exception as err:
                print(f"skip {name}/{split}: {err}", file=sys.stderr)
                continue
            for problem in problems:
                gold = module.gold_program(problem)
                yield problem.question + ("\n" + gold if gold else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab_size", type=int, default=8000)
    parser.add_argument("--name", default="lever_spm_8k")
    parser.add_argument("--out_dir", type=Path, default=ROOT / "lever_jax/data/bundled/vocab")
    parser.add_argument("--executed", type=Path, nargs="*", default=[], help="extra executed files")
    parser.add_argument(
        "--datasets", nargs="*", default=["gsm8k", "mbpp", "humaneval"],
        help="bundled datasets whose question + gold program join the corpus (the shipped model: "
        "gsm8k mbpp humaneval, the loaders that existed when it was trained)",
    )
    args = parser.parse_args(argv)

    import sentencepiece as spm

    sources: dict[str, int] = {}
    corpus: list[str] = []
    for pool, path in bundled_pool_files().items():
        items = list(executed_inputs(path))
        sources[f"gsm8k_pool/{path.name}"] = len(items)
        corpus.extend(items)
    for path in args.executed:
        items = list(executed_inputs(path))
        sources[str(path)] = len(items)
        corpus.extend(items)
    if args.datasets:
        items = list(dataset_texts(args.datasets))
        sources["bundled dataset questions + gold programs"] = len(items)
        corpus.extend(items)
    if not corpus:
        raise SystemExit("empty corpus: no bundled pool, datasets or --executed files found")
    digest = hashlib.sha256("\x00".join(corpus).encode("utf-8")).hexdigest()
    print(f"corpus: {len(corpus)} items, {sum(map(len, corpus))} characters, sha256 {digest[:16]}", file=sys.stderr)

    options = dict(
        vocab_size=args.vocab_size,
        model_type="unigram",
        byte_fallback=True,
        character_coverage=0.9995,
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
        split_digits=True,
        allow_whitespace_only_pieces=True,
        user_defined_symbols=["\n"],
        max_sentence_length=1 << 16,
        input_sentence_size=0,
        shuffle_input_sentence=False,
        pad_id=0,
        eos_id=1,
        unk_id=2,
        bos_id=-1,
        num_threads=1,
        seed_sentencepiece_size=200000,
    )
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(corpus), model_writer=model, minloglevel=2, **options)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    model_path = args.out_dir / f"{args.name}.model"
    tmp = model_path.with_suffix(".model.tmp")
    tmp.write_bytes(model.getvalue())
    tmp.replace(model_path)
    sp = spm.SentencePieceProcessor(model_file=str(model_path))
    total_tokens = sum(len(sp.encode(t)) for t in corpus)
    stats = {
        "model": model_path.name,
        "model_sha256": hashlib.sha256(model.getvalue()).hexdigest(),
        "sentencepiece_version": spm.__version__,
        "corpus_items": len(corpus),
        "corpus_characters": sum(map(len, corpus)),
        "corpus_sha256": digest,
        "sources": sources,
        "options": {k: v for k, v in options.items()},
        "tokens_per_character": round(total_tokens / sum(map(len, corpus)), 4),
        "yes_pieces": sp.encode("yes", out_type=str),
        "no_pieces": sp.encode("no", out_type=str),
    }
    write_json(args.out_dir / f"{args.name}.json", stats)
    print(json.dumps({k: stats[k] for k in ("model", "corpus_items", "tokens_per_character", "yes_pieces", "no_pieces")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
