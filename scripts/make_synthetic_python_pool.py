"""Write a synthetic samples file: gold programs + deterministic AST mutants (labelled synthetic).

    python scripts/make_synthetic_python_pool.py --dataset mbpp --split test --n 8 --seed 0 \\
        --output results/mbpp_test.synthetic.samples.jsonl.gz
    lever-jax execute --dataset mbpp --input results/mbpp_test.synthetic.samples.jsonl.gz \\
        --output results/mbpp_test.synthetic.executed.jsonl.gz

Every candidate's ``source`` is ``synthetic:gold`` or ``synthetic:<mutation>``; never report
results on these pools as real-LLM results.
"""
from __future__ import annotations

import argparse
import sys

from lever_jax.data import jsonl, load_problems
from lever_jax.data.mutations_python import synthetic_problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="mbpp", choices=("mbpp", "humaneval"))
    parser.add_argument("--split", default="test")
    parser.add_argument("--variant", default=None)
    parser.add_argument("--n", type=int, default=8, help="mutants per problem (at most)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-gold", action="store_true", help="do not include the gold program itself")
    parser.add_argument("--output", required=True)
    args = parser.parse_args(argv)
    problems = load_problems(args.dataset, args.split, args.variant)
    n = jsonl.write_problems(args.output, synthetic_problems(problems, args.n, args.seed, not args.no_gold))
    print(f"wrote {n} problems to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
