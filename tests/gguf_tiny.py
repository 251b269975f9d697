"""A tiny random-weight llama-architecture GGUF model for the sampling tests.

Two layers of width 64 and a byte-level SentencePiece-style vocabulary (``<unk>``, ``<s>``, ``</s>``
and the 256 byte tokens, so any prompt encodes). Hidden dimension 0 carries a constant that no
layer writes to, and the output layer reads it as a large bonus for newline and printable ASCII,
so completions are printable text. Real llama.cpp loads and decodes it in milliseconds; its
outputs are noise, which is all the sampler's plumbing needs.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

PRINTABLE = frozenset([0x0A] + list(range(0x20, 0x7F)))


def write_tiny_gguf(path: str | Path, *, n_embd: int = 64, n_layer: int = 2, n_head: int = 4, n_ff: int = 128,
                    ctx: int = 4096, seed: int = 0) -> Path:
    import gguf

    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(str(path), "llama")
    tokens = [b"<unk>", b"<s>", b"</s>"] + [f"<0x{b:02X}>".encode() for b in range(256)]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + [gguf.TokenType.BYTE] * 256
    n_vocab = len(tokens)
    writer.add_context_length(ctx)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(n_ff)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head)
    writer.add_rope_dimension_count(n_embd // n_head)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * n_vocab)
    writer.add_token_types(types)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_add_bos_token(True)

    def weight(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.5).astype(np.float32)

    embed = weight(n_vocab, n_embd)
    embed[:, 0] = 10.0  # the constant channel
    output = weight(n_vocab, n_embd)
    output[:, 0] = [3.0 if i >= 3 and (i - 3) in PRINTABLE else -3.0 for i in range(n_vocab)]

    def no_write(w: np.ndarray) -> np.ndarray:  # a layer's output projection leaves channel 0 alone
        w[0, :] = 0.0
        return w

    writer.add_tensor("token_embd.weight", embed)
    writer.add_tensor("output_norm.weight", np.ones(n_embd, np.float32))
    writer.add_tensor("output.weight", output)
    for i in range(n_layer):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(n_embd, np.float32))
        for name in ("attn_q", "attn_k", "attn_v"):
            writer.add_tensor(f"blk.{i}.{name}.weight", weight(n_embd, n_embd))
        writer.add_tensor(f"blk.{i}.attn_output.weight", no_write(weight(n_embd, n_embd)))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(n_embd, np.float32))
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", weight(n_ff, n_embd))
        writer.add_tensor(f"blk.{i}.ffn_up.weight", weight(n_ff, n_embd))
        writer.add_tensor(f"blk.{i}.ffn_down.weight", no_write(weight(n_embd, n_ff)))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return Path(path)
