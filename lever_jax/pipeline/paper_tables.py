"""The paper's tables from one command (scripts/paper_tables.py): every `lever-jax run` they need,
then one markdown file + one JSON with every number.

For each bundled pool (``run.POOLS``): the main table (greedy, ML, ML+EP, MBR-exec / majority vote,
voting over error-free programs, CodeT where the pool ships generated tests, LEVER, oracle), the
ablations (- gold program, - execution information, - program, - aggregation, - P_LM), accuracy vs
training problems per fold (250 / 500 / all: ``RunConfig.train_problems``, nested subsets, same
scored problems) and accuracy vs samples at inference (the run's own accuracy-vs-k numbers); then
transfer between the GSM8k pools' LLMs (``RunConfig.train_pool``). Rows come from the runs'
``metrics.json`` / ``per_problem.json`` (the one method table, ``lever_jax.rerank.table``); paired
95% CIs resample problems (``rerank.statistics.bootstrap_ci`` on per-problem differences). Each row
says whether it is comparable to the paper's number, and why not.

Runs live under OUT/runs/<pool>/<name>/ and share OUT/shared/{executed,features,folds}, so the
scoring-only ablations reuse the main run's trained folds and a re-run redoes nothing: a run whose
stamp (gin files' text + bindings) matches is read back, not rerun.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from lever_jax.data.errors import UserError
from lever_jax.data.jsonl import write_json
from lever_jax.inputs.feeds import GOLD_DATASETS
from lever_jax.pipeline.paper_tables_markdown import render, write
from lever_jax.rerank.statistics import accuracy_ci, paired
from lever_jax.rerank.table import METHODS

MAIN_ROWS = (("greedy", "greedy"), ("max_gen_prob", "ML (max generation prob.)"),
             ("ml_ep", "ML + EP (paper's main baseline)"), ("majority_vote", "MBR-exec / majority vote"),
             ("voting_error_free", "voting over error-free programs"),
             ("codet_dual_agreement", "CodeT (dual execution agreement)"), ("lever", "LEVER"),
             ("oracle", "oracle (any correct)"))
ABLATIONS = (("none", "LEVER (full)"), ("no_gold", "- gold program in training"),
             ("no_exec", "- execution information"), ("no_program", "- program"),
             ("no_agg", "- aggregation"), ("no_gen_prob", "- P_LM"))
TRANSFERS = (("gsm8k_code002", "gsm8k_other_llms"), ("gsm8k_other_llms", "gsm8k_code002"))
SIZES = (250, 500)
SECTIONS = ("protocol", "ablations", "sizes", "transfer")
QUICK_SIZES = (4, 8)
BASELINES = ("majority_vote", "ml_ep")
POOL_GIN = {"gsm8k": "gin_configs/runs/demo.gin", "humaneval": "gin_configs/runs/humaneval.gin",
            "mbpp": "gin_configs/runs/mbpp_qwen05b.gin", "spider": "gin_configs/runs/spider_qwen05b.gin",
            "wikitq_binder": "gin_configs/runs/wikitq_binder.gin"}
QUICK_BINDINGS = ("RunConfig.max_problems = 24", "RunConfig.num_folds = 2", "RunConfig.bootstrap = 200",
                  "RunConfig.execute = False", "FeatureConfig.question_len = 48", "FeatureConfig.program_len = 48",
                  "FeatureConfig.result_len = 32", "HeadConfig.steps = 12", "HeadConfig.eval_every = 6",
                  "HeadConfig.warmup_steps = 2", "HeadConfig.problems_per_step = 8", "FinetuneConfig.steps = 8",
                  "FinetuneConfig.eval_every = 4", "FinetuneConfig.warmup_steps = 2")
NO_GOLD = {
    "gsm8k": "GSM8k has no gold program (LEVER has none either)",
    "wikitq_binder": "no gold SQL: WikiTQ has none and SQUALL's annotations are not bundled",
    "humaneval": "HumanEval is not in LEVER, which adds gold programs for Spider, WikiTQ and MBPP only "
                 "(RunConfig.add_gold)",
}
# What the paper reports (LEVER + Codex code-davinci-002; /work/shared/LEVER_NOTES.md, the CodeT
# paper for HumanEval) per dataset: method key -> number.
PAPER = {"gsm8k": {"greedy": 67.2, "ml_ep": 72.6, "lever": 84.5},
         "mbpp": {"greedy": 62.0, "ml_ep": 60.2, "majority_vote": 63.0, "lever": 68.9, "lever_protocol": 68.9},
         "spider": {"greedy": 75.3, "ml_ep": 77.3, "majority_vote": 75.2, "lever": 81.9, "lever_protocol": 81.9},
         "wikitq_binder": {"greedy": 53.0, "ml_ep": 54.9, "lever": 65.8},
         "humaneval": {"codet_dual_agreement": 36.7}}
# Why a pool's rows differ from the paper's (notes cited by letter in the tables).
POOL_NOTES = {
    "gsm8k_code002": {"S": "our code-davinci-002 samples (Faithful-CoT / PoT prompts, 14 per problem) are not "
                           "LEVER's Codex samples",
                      "T": "the verifier is cross-fitted on GSM8k *test* problems (LEVER trains on the training "
                           "split's samples)"},
    "gsm8k_other_llms": {"S": "a mixture of other LLMs' samples (code-davinci-001, text-davinci-002/003, "
                              "gpt-3.5-turbo, gpt-4); the paper's main table is Codex",
                         "T": "the verifier is cross-fitted on GSM8k *test* problems"},
    "humaneval_codegen16b": {"S": "HumanEval is not in the LEVER paper; the samples and generated tests are "
                                  "CodeT's release (CodeGen-16B x 100), so CodeT's 36.7 is the anchor",
                             "T": "the verifier is cross-fitted on the 164 test problems"},
    "humaneval_codegen16b_hidden_inputs": {
        "S": "UPPER BOUND, not deployable: the hidden tests' inputs feed the verifier and the grouping",
        "T": "the verifier is cross-fitted on the 164 test problems"},
    "mbpp_qwen05b": {"S": "Qwen2.5-Coder-0.5B-Instruct (4-bit Q4_K_M) samples drawn by lever-jax on a CPU, 5 per "
                          "problem at temperature 0.6 + the greedy decode; the paper's are Codex code-davinci-002, "
                          "a far stronger model (its greedy: 62.0 vs this pool's ~27)",
                     "T": "the `lever` row's verifier is cross-fitted on the 500 test problems; the `lever_protocol` "
                          "row follows LEVER's protocol (trained on the train split's pool, 374 problems; checkpoint "
                          "picked on a held-out 10% of them)",
                     "V": "the verifier is all-MiniLM-L6-v2 with its top two layers fine-tuned (480 steps) on LEVER's "
                          "input (question + program + execution result) and gold programs as positives, not "
                          "T5-large"},
    "spider_qwen05b": {"S": "Qwen2.5-Coder-0.5B-Instruct (4-bit Q4_K_M) samples drawn by lever-jax on a CPU, 5 per "
                            "question at temperature 0.6 + the greedy decode, over all 1,034 dev questions; the "
                            "paper's are Codex code-davinci-002 (its greedy: 75.3 vs this pool's ~34)",
                       "T": "the `lever` row's verifier is cross-fitted on the dev questions; the `lever_protocol` "
                            "row follows LEVER's protocol (trained on a seeded 1,000-question subset of the train "
                            "split's pool, checkpoint picked on a held-out 10% of them, reported on dev)",
                       "V": "the verifier is all-MiniLM-L6-v2 with its top two layers fine-tuned (480 steps, MBPP's "
                            "settings) on LEVER's input (question + SQL + execution result) and gold SQL as "
                            "positives, not T5-base",
                       "E": "the databases are rebuilt from SpiderMan's CSVs (data card: missing tables, corrected "
                            "values), and correctness is test-suite-style execution match on them, so the gold's "
                            "own results can differ from the original Spider databases'"},
    "wikitq_binder": {"S": "94 WikiTQ test questions x 20 Binder (gpt-3.5) samples, not Codex on the full test "
                           "set; correct = LEVER's relaxed checker (the paper's 65.8 uses it)",
                      "T": "the verifier is cross-fitted on those test questions"},
}



@dataclasses.dataclass(frozen=True)
class Job:
    """One `lever-jax run` of the tables: a pool, a name (its directory) and bindings."""

    pool: str
    name: str
    bindings: tuple[str, ...] = ()


RunFn = Callable[[Path, Sequence[str], Sequence[str]], dict[str, Any]]


class Tables:
    """Plans, runs (or reads back) and tabulates the runs of ``pools`` into ``out``."""

    def __init__(self, out: Path, run_fn: RunFn, pools: Sequence[str], datasets: dict[str, str],
                 gin_files: Optional[Sequence[str]] = None, bindings: Sequence[str] = (), quick: bool = False,
                 bootstrap: int = 10_000, sections: Sequence[str] = SECTIONS, run_new: bool = True,
                 train_pools: Optional[dict[str, str]] = None) -> None:
        self.out, self.run_fn, self.pools, self.datasets = out, run_fn, list(pools), datasets
        self.train_pools = dict(train_pools or {})  # pool -> its TRAIN split's pool (LEVER's protocol row)
        self.gin_files, self.user_bindings, self.quick = gin_files, list(bindings), quick
        self.bootstrap = 200 if quick else bootstrap
        self.sizes = QUICK_SIZES if quick else SIZES
        self.sections = set(sections)
        self.run_new = run_new  # False: tabulate the finished runs only (the others say 'not run')
        self.timings: dict[str, float] = {}

    # ------------------------------------------------------------------ running
    def files(self, pool: str) -> list[str]:
        return list(self.gin_files) if self.gin_files else [POOL_GIN.get(self.datasets[pool], POOL_GIN["gsm8k"])]

    def bindings(self, job: Job) -> list[str]:
        shared = self.out / "shared"
        out = [f"RunConfig.pool = '{job.pool}'", f"RunConfig.executed_dir = '{shared / 'executed'}'",
               f"RunConfig.features_dir = '{shared / 'features'}'", f"RunConfig.folds_dir = '{shared / 'folds'}'",
               "RunConfig.progress = False"]
        if self.datasets[job.pool] != "gsm8k":  # the hand-crafted candidate features are GSM8k's
            out.append("HeadConfig.use_candidate_features = False")
        if self.quick:
            out += QUICK_BINDINGS
        return out + self.user_bindings + list(job.bindings)

    def run(self, job: Job) -> Optional[tuple[dict[str, Any], dict[str, Any]]]:
        """metrics.json and per_problem.json of ``job`` (run now unless its stamp matches; None when
        it has not run and ``run_new`` is False)."""
        run_dir = self.out / "runs" / job.pool / job.name
        files, bindings = self.files(job.pool), self.bindings(job)
        stamp = {"gin": [[f, _text_sha(f)] for f in files], "bindings": list(bindings)}
        stamp_path = run_dir / "paper_tables_stamp.json"
        done = all((run_dir / n).exists() for n in ("metrics.json", "per_problem.json", stamp_path.name))
        if not (done and json.loads(stamp_path.read_text()) == stamp):
            if not self.run_new:
                return None
            t = time.time()
            self.run_fn(run_dir, files, bindings)
            write_json(stamp_path, stamp)
            self.timings[f"{job.pool}/{job.name}"] = time.time() - t
        return (json.loads((run_dir / "metrics.json").read_text()),
                json.loads((run_dir / "per_problem.json").read_text()))

    # ------------------------------------------------------------------ rows
    def gains(self, values: dict[str, list], row: Sequence[Optional[float]], key: str = "") -> dict[str, Any]:
        """Paired gains of ``row`` over each baseline present (none over itself)."""
        return {f"minus_{b}": paired(row, values[b], self.bootstrap) if b in values and b != key else None
                for b in BASELINES}

    def main_table(self, pool: str, per: dict[str, Any], metrics: dict[str, Any],
                   protocol: Optional[tuple[dict, dict]] = None) -> list[dict[str, Any]]:
        values = per["methods"]
        rows = []
        for key, label in MAIN_ROWS:
            row: dict[str, Any] = {"key": key, "label": label, **self.comparable(pool, key)}
            if key not in values:
                row["n/a"] = _absent_reason(key, pool, metrics)
            else:
                row.update(accuracy=accuracy_ci(values[key], self.bootstrap), **self.gains(values, values[key], key))
            rows.append(row)
            if key == "lever" and protocol is not None:
                rows.append(self.protocol_row(pool, per, protocol))
        second = metrics.get("methods_second_checker")
        if second and "lever" in second:  # WikiTQ: the same LEVER choices judged by the official evaluator
            row = {"key": "lever_second_checker", "label": f"LEVER, judged by the {second['checker']}",
                   "accuracy": {k: second["lever"][k] for k in ("accuracy", "ci_low", "ci_high")},
                   "minus_majority_vote": None, "minus_ml_ep": None, **self.comparable(pool, "lever")}
            row["paper"] = 62.9 if self.datasets[pool] == "wikitq_binder" else None
            rows.append(row)
        return rows

    def protocol_row(self, pool: str, per: dict[str, Any], protocol: tuple[dict, dict]) -> dict[str, Any]:
        """LEVER under LEVER's protocol (one verifier trained on the TRAIN split's pool), paired with
        the main run's baselines over the same problems."""
        metrics, own = protocol
        if own["problem_ids"] != per["problem_ids"]:
            raise UserError(f"{pool}: the LEVER's-protocol run scored other problems than the main run")
        lever = own["methods"]["lever"]
        return {"key": "lever_protocol", "label": f"LEVER, LEVER's protocol (trained on "
                f"{metrics['training']['train_pool']})", **self.comparable(pool, "lever_protocol"),
                "accuracy": accuracy_ci(lever, self.bootstrap), **self.gains(per["methods"], lever)}

    @staticmethod
    def judged_notes(pool: str) -> list[str]:
        """["E"] where the pool has a note on how its correctness is judged (every row cites it)."""
        return ["E"] if "E" in POOL_NOTES.get(pool, {}) else []

    def verifier_notes(self, pool: str) -> list[str]:
        """The notes of a row that a trained verifier scored."""
        return ["Q"] if self.quick else ["S", "T", "V", *self.judged_notes(pool)]

    def comparable(self, pool: str, key: str) -> dict[str, Any]:
        """The paper's number for this row (if any) and why ours is (not) comparable."""
        dataset = self.datasets[pool]
        paper = PAPER.get(dataset, {}).get(key)
        notes = ["S", "T"] + (["V"] if key.startswith("lever") else [])
        if key in ("greedy", "max_gen_prob", "ml_ep", "majority_vote", "voting_error_free", "oracle",
                   "codet_dual_agreement"):
            notes = ["S"]  # no verifier in these rows
        comparable = "no"
        if pool == "humaneval_codegen16b" and key == "codet_dual_agreement":
            comparable = "yes: the CodeT paper's samples and generated tests, its |samples| x |tests| score"
            notes = []
        notes = notes + self.judged_notes(pool)
        if self.quick:
            comparable, notes = "no", ["Q"]
        return {"paper": paper, "comparable": comparable, "notes": notes}

    def _not_run(self, pool: str, ablation: str) -> str:
        """Why an ablation row has no number: the dataset has no gold program, or --sections left it out."""
        if ablation == "no_gold" and self.datasets[pool] not in GOLD_DATASETS:
            return NO_GOLD.get(self.datasets[pool], "the dataset has no gold program")
        return "not run" + ("" if "ablations" in self.sections else " (--sections)")

    def ablations(self, pool: str, runs: dict[str, tuple[dict, dict]]) -> list[dict[str, Any]]:
        full = runs["none"][1]["methods"]["lever"]
        rows = []
        for ablation, label in ABLATIONS:
            row: dict[str, Any] = {"ablation": ablation, "label": label, "comparable": "no",
                                   "notes": self.verifier_notes(pool)}
            if ablation not in runs:
                row["n/a"] = self._not_run(pool, ablation)
                rows.append(row)
                continue
            metrics, per = runs[ablation]
            head = "lever_no_agg" if ablation == "no_agg" else "lever"
            values = per["methods"]
            row.update(accuracy=accuracy_ci(values[head], self.bootstrap), minus_full=paired(
                values[head], full, self.bootstrap) if ablation != "none" else None,
                binary_acc=metrics["verifier"]["binary_acc"], **self.gains(values, values[head]))
            rows.append(row)
        return rows

    def sizes_table(self, pool: str, runs: dict[str, tuple[dict, dict]], per_fold: int) -> list[dict[str, Any]]:
        full = runs["all"][1]["methods"]["lever"]
        rows = []
        for name in [*(str(n) for n in self.sizes), "all"]:
            row: dict[str, Any] = {"train_problems": name, "comparable": "no",
                                   "notes": self.verifier_notes(pool)}
            if name not in runs:
                row["n/a"] = f"the pool has only {per_fold} training problems per fold" \
                    if int(name) >= per_fold else "not run" + ("" if "sizes" in self.sections else " (--sections)")
            else:
                metrics, per = runs[name]
                values = per["methods"]
                row.update(accuracy=accuracy_ci(values["lever"], self.bootstrap),
                           train_rows_per_fold=metrics["training"]["train_rows_per_fold"],
                           minus_all=paired(values["lever"], full, self.bootstrap) if name != "all" else None,
                           **self.gains(values, values["lever"]))
            rows.append(row)
        return rows

    @staticmethod
    def k_table(metrics: dict[str, Any]) -> list[dict[str, Any]]:
        curves = metrics["accuracy_at_k"]
        rows = []
        for k in sorted({p["k"] for p in curves.get("lever", [])}):  # the run's k (1, 2, 4, 5, 8, ..., all)
            row: dict[str, Any] = {"k": k}
            for method in ("majority_vote", "ml_ep", "voting_error_free", "lever", "oracle"):
                point = next((p for p in curves.get(method, []) if p["k"] == k), None)
                if point is not None:
                    row[method] = {"accuracy": point["accuracy"], "std": point["std"]}
            rows.append(row)
        return rows

    # ------------------------------------------------------------------ the whole thing
    # The most informative runs per CPU-second first: main tables; the scoring-only ablations (they
    # reuse the main run's folds); transfer; training sizes; the input ablations (retrained).
    PHASES = ("main", "protocol", "scoring_ablations", "transfer", "sizes", "input_ablations")
    SECTION_OF = {"scoring_ablations": "ablations", "input_ablations": "ablations"}

    def jobs(self, phase: str, pool: str, done: dict[str, tuple[dict, dict]]) -> list[Job]:
        """The runs of one phase for one pool (size runs only below the pool's training rows)."""
        if phase == "main":
            return [Job(pool, "main")]
        if self.SECTION_OF.get(phase, phase) not in self.sections:
            return []
        if phase == "protocol":
            train = self.train_pools.get(pool)
            return [Job(pool, "lever_protocol", ("RunConfig.protocol = 'lever'", f"RunConfig.train_pool = '{train}'"))] \
                if train else []
        if phase.endswith("ablations"):
            names = ("no_agg", "no_gen_prob") if phase == "scoring_ablations" else ("no_exec", "no_program")
            jobs = [Job(pool, a, (f"RunConfig.ablation = '{a}'",)) for a in names]
            if phase == "input_ablations" and self.datasets[pool] in GOLD_DATASETS:  # retrained without gold
                jobs.append(Job(pool, "no_gold", ("RunConfig.add_gold = False",)))
            return jobs
        if phase == "sizes":
            per_fold = min(done["main"][0]["training"]["train_rows_per_fold"])
            return [Job(pool, f"train{n}", (f"RunConfig.train_problems = {n}",)) for n in self.sizes if n < per_fold]
        return [Job(pool, f"from_{train}", (f"RunConfig.train_pool = '{train}'",))
                for train, evaluated in TRANSFERS if evaluated == pool and train in self.pools]

    def build(self, partial: Optional[Callable[[dict[str, Any]], None]] = None) -> dict[str, Any]:
        """Every table, phase by phase (main tables of every pool first); ``partial(doc)`` after each
        phase, so a long run leaves its tables so far."""
        runs: dict[str, dict[str, tuple[dict, dict]]] = {pool: {} for pool in self.pools}
        doc: dict[str, Any] = {}
        for phase in self.PHASES:
            order = self.pools if phase == "main" else sorted(runs, key=lambda q: runs[q]["main"][0]["samples"])
            for pool in order:  # after the main runs: the smaller pools first
                for job in self.jobs(phase, pool, runs[pool]):
                    result = self.run(job)
                    if result is not None:
                        runs[pool][job.name] = result
            if phase == "main" and not self.run_new:
                self._require_finished(runs)
            runs = {q: done for q, done in runs.items() if "main" in done}
            doc = self.assemble(runs)
            if partial is not None and phase != self.PHASES[-1]:
                partial(doc)
        return doc

    def _require_finished(self, runs: dict[str, dict[str, tuple[dict, dict]]]) -> None:
        """--finished_only: a pool without its finished main run is an error, before anything is written
        (an empty document would silently replace the tables of a run made with other settings)."""
        missing = [pool for pool in self.pools if "main" not in runs[pool]]
        if missing:
            raise UserError(
                f"--finished_only: {self.out / 'runs' / missing[0] / 'main'}: no finished run with these gin files "
                f"and bindings (its paper_tables_stamp.json records them: pass the --gin_file / --gin_bindings "
                f"it was made with); pools without one: {', '.join(missing)}")

    def assemble(self, runs: dict[str, dict[str, tuple[dict, dict]]]) -> dict[str, Any]:
        """The document from the runs made so far (missing rows say 'not run')."""
        doc: dict[str, Any] = {"pools": {}, "transfer": [], "quick": self.quick, "bootstrap": self.bootstrap,
                               "timings_s": dict(self.timings)}
        for pool, done in runs.items():
            main = done["main"]
            per_fold = min(main[0]["training"]["train_rows_per_fold"])
            ablations = {"none": main, **{k: v for k, v in done.items() if k.startswith("no_")}}
            sizes = {"all": main, **{k[len("train"):]: v for k, v in done.items() if k.startswith("train")}}
            doc["pools"][pool] = {
                "dataset": self.datasets[pool], "problems": main[0]["problems"], "samples": main[0]["samples"],
                "notes": POOL_NOTES.get(pool, {}),
                "main": self.main_table(pool, main[1], main[0], done.get("lever_protocol")),
                "ablations": self.ablations(pool, ablations),
                "train_sizes": self.sizes_table(pool, sizes, per_fold),
                "samples_at_inference": self.k_table(main[0]),
            }
        for train, evaluated in TRANSFERS:
            if train in runs and f"from_{train}" in runs.get(evaluated, {}):
                doc["transfer"].append(self.transfer(train, evaluated, runs[evaluated]))
        return doc

    def transfer(self, train: str, evaluated: str, done: dict[str, tuple[dict, dict]]) -> dict[str, Any]:
        (metrics, per), main = done[f"from_{train}"], done["main"]
        values, own = per["methods"], main[1]["methods"]
        return {"train_pool": train, "eval_pool": evaluated, "comparable": "no",
                "notes": self.verifier_notes(evaluated),
                "in_pool": accuracy_ci(own["lever"], self.bootstrap),
                "transfer": accuracy_ci(values["lever"], self.bootstrap),
                "transfer_minus_in_pool": paired(values["lever"], own["lever"], self.bootstrap),
                "binary_acc": metrics["verifier"]["binary_acc"],
                "in_pool_binary_acc": main[0]["verifier"]["binary_acc"],
                **self.gains(values, values["lever"])}


def _text_sha(path: str) -> str:
    p = Path(path)
    return hashlib.sha256(p.read_bytes()).hexdigest()[:16] if p.is_file() else path


def _absent_reason(key: str, pool: str, metrics: dict[str, Any]) -> str:
    if key == "greedy":
        return "the pool marks no greedy decode"
    if key in ("max_gen_prob", "ml_ep"):
        return "the pool has no generation log-probs"
    if key == "codet_dual_agreement":
        return "the pool ships no generated tests"
    if key == "voting_error_free":
        return "the pool records no execution status"
    return f"not in {pool}'s method table"


__all__ = ["Tables", "Job", "render", "write", "paired", "METHODS"]
