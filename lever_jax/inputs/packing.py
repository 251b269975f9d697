"""No FLOPs on padding: t5x/seqio-style packing of verifier inputs, and length-bucketed batching.

LEVER feeds a problem's candidates as one [K, L] block padded to the longest candidate; on the
GSM8k pool most candidates are far shorter than the longest one (docs/bench/train.md measures the
distribution), so most of those FLOPs are spent on padding. Two ways out:

* `pack`: several sequences share a row of `row_len` tokens. Each token carries a segment id
  (1, 2, ... within its row; 0 = padding) and a position that restarts at 0 in every segment; the
  models turn segment ids into block-diagonal attention (layers.segment_bias) and pool per segment
  (layers.segment_mean / segment_first), so a packed sequence computes exactly what it computes
  alone. `PackedRows.row` / `.segment` say where sequence i went, so per-sequence outputs
  ([R, S, ...] -> [N, ...]) scatter back to LEVER's [P, K] layout and the loss stays LEVER's
  (per-problem mean, then mean over problems).
* `bucket`: the simpler alternative: sort sequences by length and pad each batch only to its own
  longest member, rounded up to a multiple (few distinct shapes, so few compilations).

Packing is first-fit-decreasing, deterministic. Rows are padded to a multiple of `row_multiple`
(fixed shapes for jit).
"""
from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

import numpy as np


@dataclasses.dataclass(frozen=True)
class PackedRows:
    """Packed token rows and where every input sequence went."""

    tokens: np.ndarray  # int32 [R, L] (0 where nothing is packed)
    segment_ids: np.ndarray  # int32 [R, L], 1.. per sequence within its row, 0 = padding
    positions: np.ndarray  # int32 [R, L], 0.. within each segment
    row: np.ndarray  # int32 [N]: row of sequence i
    segment: np.ndarray  # int32 [N]: segment id (1-based) of sequence i in its row
    offset: np.ndarray  # int32 [N]: first token of sequence i in its row
    num_segments: int  # S: the most segments of any row (static per batch shape)

    @property
    def fill(self) -> float:
        """Fraction of token slots holding real tokens (1.0 = no padding at all)."""
        return float((self.segment_ids > 0).mean()) if self.segment_ids.size else 1.0


def first_fit_decreasing(lengths: Sequence[int], row_len: int,
                         max_segments: Optional[int] = None) -> tuple[np.ndarray, np.ndarray]:
    """Rows for sequences of `lengths` (each <= row_len): (row [N], offset [N]).

    Longest first, each into the first row with room (and fewer than `max_segments` segments).
    """
    lengths = np.asarray(lengths, np.int64)
    if lengths.size and lengths.max() > row_len:
        raise ValueError(f"sequence of length {int(lengths.max())} does not fit a row of {row_len}")
    order = np.argsort(-lengths, kind="stable")
    free: list[int] = []
    count: list[int] = []
    row = np.zeros(len(lengths), np.int32)
    offset = np.zeros(len(lengths), np.int32)
    for i in order:
        n = int(lengths[i])
        for r, room in enumerate(free):
            if room >= n and (max_segments is None or count[r] < max_segments):
                break
        else:
            free.append(row_len)
            count.append(0)
            r = len(free) - 1
        row[i], offset[i] = r, row_len - free[r]
        free[r] -= n
        count[r] += 1
    return row, offset


def pack(sequences: Sequence[Sequence[int]], row_len: int, row_multiple: int = 1,
         max_segments: Optional[int] = None, min_rows: int = 0) -> PackedRows:
    """Pack token `sequences` (each non-empty, <= row_len) into rows of `row_len` tokens."""
    lengths = [len(s) for s in sequences]
    if any(n == 0 for n in lengths):
        raise ValueError("cannot pack an empty sequence (it would have no segment)")
    row, offset = first_fit_decreasing(lengths, row_len, max_segments)
    n_rows = int(row.max()) + 1 if len(row) else 0
    n_rows = max(min_rows, -(-n_rows // row_multiple) * row_multiple, 1)
    tokens = np.zeros((n_rows, row_len), np.int32)
    seg_ids = np.zeros((n_rows, row_len), np.int32)
    pos = np.zeros((n_rows, row_len), np.int32)
    segment = np.zeros(len(lengths), np.int32)
    used = np.zeros(n_rows, np.int32)
    for i in np.argsort(offset, kind="stable"):  # segment ids increase left to right in a row
        r, o, n = row[i], offset[i], lengths[i]
        used[r] += 1
        segment[i] = used[r]
        tokens[r, o:o + n] = sequences[i]
        seg_ids[r, o:o + n] = used[r]
        pos[r, o:o + n] = np.arange(n)
    return PackedRows(tokens, seg_ids, pos, row, segment, offset, max(int(used.max()), 1))


def pad_rows(packed: PackedRows, num_rows: int, num_segments: int) -> PackedRows:
    """The same packing with at least `num_rows` rows and `num_segments` segments (fixed shapes)."""
    extra = num_rows - packed.tokens.shape[0]
    if extra < 0 or num_segments < packed.num_segments:
        raise ValueError("pad_rows cannot shrink a packing")
    z = lambda a: np.concatenate([a, np.zeros((extra, a.shape[1]), a.dtype)])
    return dataclasses.replace(packed, tokens=z(packed.tokens), segment_ids=z(packed.segment_ids),
                               positions=z(packed.positions), num_segments=num_segments)


def bucket(lengths: Sequence[int], batch_size: int, multiple: int = 16) -> list[tuple[np.ndarray, int]]:
    """Length-bucketed batching: [(indices, padded width)] covering every sequence once.

    Sequences sorted by length (stable), `batch_size` per batch, each batch padded to its own
    longest length rounded up to `multiple`.
    """
    lengths = np.asarray(lengths, np.int64)
    order = np.argsort(lengths, kind="stable")
    out = []
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        width = int(-(-int(lengths[idx].max()) // multiple) * multiple)
        out.append((idx, width))
    return out


def pad_batch(sequences: Sequence[Sequence[int]], width: Optional[int] = None,
              pad_id: int = 0) -> np.ndarray:
    """Sequences -> int32 [N, width] right-padded with `pad_id` (width: the longest)."""
    width = max((len(s) for s in sequences), default=1) if width is None else width
    out = np.full((len(sequences), width), pad_id, np.int32)
    for i, s in enumerate(sequences):
        out[i, :len(s)] = s
    return out


def packed_batch(tokens: np.ndarray, candidate_mask: np.ndarray, row_len: int, pad_id: int = 0,
                 row_multiple: int = 1, max_segments: Optional[int] = None,
                 num_rows: Optional[int] = None, num_segments: Optional[int] = None,
                 num_sequences: Optional[int] = None) -> tuple[dict[str, np.ndarray], int]:
    """LEVER's [P, K, L] padded candidate block -> (packed batch for `packed_loss_fn`, S).

    Every valid candidate (padding stripped: tokens != pad_id) becomes one packed sequence;
    `num_rows` / `num_segments` / `num_sequences` fix the shapes (padding rows, segments and
    sequences whose slot P * K is dropped) so that steps share one compilation.
    """
    p, k, _ = tokens.shape
    slots = np.flatnonzero(candidate_mask.reshape(-1))
    flat = tokens.reshape(p * k, -1)
    seqs = [flat[s][flat[s] != pad_id] for s in slots]
    packed = pack(seqs, row_len, row_multiple, max_segments)
    rows = packed.tokens.shape[0] if num_rows is None else num_rows
    segs = packed.num_segments if num_segments is None else num_segments
    if rows < packed.tokens.shape[0] or segs < packed.num_segments:
        raise ValueError(f"packing needs {packed.tokens.shape[0]} rows x {packed.num_segments} "
                         f"segments, more than the fixed {rows} x {segs}")
    packed = pad_rows(packed, rows, segs)
    n = len(slots) if num_sequences is None else num_sequences
    pad = n - len(slots)
    if pad < 0:
        raise ValueError(f"{len(slots)} sequences exceed num_sequences={n}")
    fill = lambda a, v: np.concatenate([a, np.full(pad, v, np.int32)]).astype(np.int32)
    tok = packed.tokens if pad_id == 0 else np.where(packed.segment_ids > 0, packed.tokens, pad_id)
    batch = {"packed_tokens": tok.astype(np.int32), "segment_ids": packed.segment_ids,
             "positions": packed.positions, "sequence_row": fill(packed.row, 0),
             "sequence_segment": fill(packed.segment, 1), "sequence_slot": fill(slots, p * k)}
    return batch, segs


# --------------------------------------------------------------------------- trainer feeds
BATCHING_MODES = ("packed", "bucketed", "padded")


def round_up(n: int, multiple: int) -> int:
    return -(-int(n) // multiple) * multiple


def sequence_lengths(tokens: np.ndarray, pad_id: int) -> np.ndarray:
    """Real tokens per candidate of a right-padded block [..., L] (index of the last non-pad + 1)."""
    real = tokens != pad_id
    last = real.shape[-1] - np.argmax(real[..., ::-1], axis=-1)
    return np.where(real.any(-1), last, 0).astype(np.int32)


def bucketed_width(tokens: np.ndarray, pad_id: int, multiple: int) -> int:
    """LEVER's feed width: the longest candidate of the batch, rounded up to `multiple` (few
    distinct widths, so few compilations), never above the block's own width."""
    longest = int(sequence_lengths(tokens, pad_id).max(initial=1))
    return min(tokens.shape[-1], round_up(max(longest, 1), multiple))


def _micro_problems(num_problems: int, accum: int, hosts: int, host: int, micro: int) -> np.ndarray:
    """Problems (rows of the global [P, K] block) of micro-batch `micro` on `host`, in order.

    The trainer's padded split sends global row g to micro-batch g % accum, row g // accum;
    a host holds rows host * P_h .. (host + 1) * P_h - 1 (P_h a multiple of `accum`)."""
    per_host = num_problems // hosts
    start = host * per_host
    return np.arange(start + micro, start + per_host, accum)


def packed_train_batch(tokens: np.ndarray, candidate_mask: np.ndarray, labels: np.ndarray,
                       row_len: int, pad_id: int = 0, accum_steps: int = 1, hosts: int = 1,
                       host: int = 0, row_multiple: int = 1,
                       segment_multiple: int = 4) -> dict[str, object]:
    """A global LEVER block [P, K, L] -> this host's packed micro-batches for the trainer.

    Every key has a leading micro-batch axis of `accum_steps` (the trainer scans over it; the
    data axis is the second): 'packed_tokens' / 'segment_ids' / 'positions' [a, R, row_len],
    'sequence_row' / 'sequence_segment' / 'sequence_slot' [a, N] (N = the host's problems per
    micro-batch x K; slot = global micro-batch problem x K + k, Pm x K = padding, dropped),
    'labels' / 'candidate_mask' [a, Pm_h, K]; plus 'num_segments' (a Python int, static).
    R and S are the most any (host, micro-batch) of this batch needs, rounded up to
    `row_multiple` / `segment_multiple`, so every host builds the same shapes from the same
    global batch without talking to the others, and a step's shapes depend on that step only
    (resuming replays the same compiled programs)."""
    p, k, _ = tokens.shape
    a = accum_steps
    if p % (hosts * a):
        raise ValueError(f"{p} problems not divisible by {hosts} hosts x accum_steps={a}")
    lengths = sequence_lengths(tokens, pad_id)
    mask = np.asarray(candidate_mask, bool) & (lengths > 0)
    rows = segs = 1
    for h in range(hosts):
        for m in range(a):
            lens = lengths[_micro_problems(p, a, hosts, h, m)]
            lens = lens[mask[_micro_problems(p, a, hosts, h, m)]]
            if lens.size:
                row, _ = first_fit_decreasing(lens, row_len)
                rows = max(rows, int(row.max()) + 1)
                segs = max(segs, int(np.bincount(row).max()))
    rows, segs = round_up(rows, row_multiple), round_up(segs, segment_multiple)
    pm_h = p // (hosts * a)
    out: dict[str, list] = {}
    for m in range(a):
        idx = _micro_problems(p, a, hosts, host, m)
        batch, _ = packed_batch(tokens[idx], mask[idx], row_len, pad_id, num_rows=rows,
                                num_segments=segs, num_sequences=pm_h * k)
        real = batch["sequence_slot"] < pm_h * k
        batch["sequence_slot"] = np.where(real, batch["sequence_slot"] + host * pm_h * k,
                                          hosts * pm_h * k).astype(np.int32)
        batch["sequence_row"] = (batch["sequence_row"] + host * rows).astype(np.int32)
        batch["labels"] = np.asarray(labels[idx], np.int32)
        batch["candidate_mask"] = mask[idx]
        for key, value in batch.items():
            out.setdefault(key, []).append(value)
    result: dict[str, object] = {key: np.stack(values) for key, values in out.items()}
    result["num_segments"] = segs
    return result


def bucketed_train_batch(tokens: np.ndarray, candidate_mask: np.ndarray, labels: np.ndarray,
                         tokens_key: str, pad_id: int = 0, accum_steps: int = 1, hosts: int = 1,
                         host: int = 0, multiple: int = 32) -> dict[str, object]:
    """A global LEVER block [P, K, L] -> this host's micro-batches, each padded to its own longest.

    LEVER's loop pads every forward's candidates to *their* longest (one problem per GPU and
    forward, gradients accumulated); one width for the whole batch would pad every micro-batch to
    the batch's longest. Keys: `tokens_key` [a, Pm_h, K, W] (W = the widest micro-batch),
    'labels' / 'candidate_mask' [a, Pm_h, K], and 'micro_widths' (a tuple of a ints: micro-batch
    m's longest candidate over all hosts, rounded up to `multiple`, at most L; the trainer cuts
    micro-batch m to it, one compilation per width). Micro-batch m holds the host's rows m, m + a,
    ... (the padded feed's split inside the step), so both compute the same loss."""
    p, k, length = tokens.shape
    a = accum_steps
    if p % (hosts * a):
        raise ValueError(f"{p} problems not divisible by {hosts} hosts x accum_steps={a}")
    lengths = np.where(np.asarray(candidate_mask, bool), sequence_lengths(tokens, pad_id), 0)
    widths = tuple(min(length, round_up(int(lengths[m::a].max(initial=1)), multiple))
                   for m in range(a))  # global row g is in micro-batch g % a on every host
    per_host = p // hosts
    rows = slice(host * per_host, (host + 1) * per_host)
    split = lambda x: np.stack([x[rows][m::a] for m in range(a)])  # host row i*a+m -> [m, i]
    return {tokens_key: split(tokens)[..., :max(widths)], "labels": split(np.asarray(labels, np.int32)),
            "candidate_mask": split(np.asarray(candidate_mask, bool)), "micro_widths": widths}
