"""What `rerank` and `run` print and write: the method table (``lever_jax.rerank.table``, the one
implementation), its markdown / JSON renderings and the scores file (``scores_file``, v2)."""
from __future__ import annotations

from typing import Any, Mapping, Optional

import numpy as np

from lever_jax.data.arrays import CandidateArrays
from lever_jax.rerank import scores_file
from lever_jax.rerank.table import (  # noqa: F401  (re-exported: the report API)
    METHODS,
    MethodResult,
    accuracy_curves,
    format_table,
    gen_logprob_for_rerank,
    method_table,
    metrics_json,
)

METHOD_LABELS = METHODS  # display names in table order


def scores_json(
    arrays: CandidateArrays,
    table: Mapping[str, MethodResult],
    verifier_logprob: Optional[np.ndarray] = None,
    *,
    normalize_gen: bool = False,
    use_gen_prob: bool = True,
    **metadata: Any,
) -> dict[str, Any]:
    """The v2 scores document (docs/data_format.md) with the table's choices."""
    return scores_file.scores_document(
        arrays, verifier_logprob, normalize_gen=normalize_gen, use_gen_prob=use_gen_prob,
        choices={name: r.choice for name, r in table.items()}, metadata=metadata)
