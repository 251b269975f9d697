"""Ground floor: the data contract, file I/O, datasets and candidate pools (imports nothing of ours above it).

Public API: the names in ``__all__``, imported on first use (PEP 562, ``lever_jax._exports``):
importing the package imports none of its modules. The rest is internal.
"""
from lever_jax._exports import lazy_exports

_EXPORTS: dict[str, str] = {
    # the data contract (docs/data_format.md) and its files
    "Problem": "schema:Problem", "Candidate": "schema:Candidate", "Execution": "schema:Execution",
    "SchemaError": "schema:SchemaError",
    "read_problems": "jsonl:read_problems", "write_problems": "jsonl:write_problems",
    "iter_json_lines": "jsonl:iter_json_lines", "write_json": "jsonl:write_json",
    "write_json_lines": "jsonl:write_json_lines", "atomic_writer": "jsonl:atomic_writer",
    "DataFileError": "jsonl:DataFileError", "UserError": "errors:UserError",
    # the one [P, N] container every reranker reads
    "CandidateArrays": "arrays:CandidateArrays", "problems_to_arrays": "arrays:problems_to_arrays",
    # datasets, folds, bundled pools
    "load_problems": "datasets:load_problems", "gold_program": "datasets:gold_program",
    "assign_folds": "folds:assign_folds", "bundled_path": "bundled:bundled_path",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
