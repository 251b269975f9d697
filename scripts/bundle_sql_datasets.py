"""Copy Spider and WikiTQ from the shared data folder into lever_jax/data/bundled/ (run once).

    python scripts/bundle_sql_datasets.py --shared /work/shared/data

Spider: dev.jsonl.gz (official dev.json: db_id, question, query), dev_spiderman.jsonl.gz and
train.jsonl.gz (SpiderMan's test/train_queries.csv), tables.json.gz, databases_dev.tar.xz (the
20 dev databases) and databases_train.tar.xz (the others), each as ``<db_id>/schema.sql`` +
``<db_id>/data/<Table>.csv`` from SpiderMan. WikiTQ: {train,dev,test}.jsonl.gz (random-split-1
train/dev, pristine-unseen test with CoreNLP canonical targets from the tagged file),
tables.tar.xz (SQUALL's SQLite files) and columns.json.gz (LEVER column names per table).
Outputs are deterministic (sorted members, zero mtimes, fixed owners).
"""
from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import lzma
import sys
import tarfile
from pathlib import Path

from lever_jax.data.datasets.wikitq import lever_column_names
from lever_jax.data import write_json, write_json_lines
from lever_jax.execution.wikitq_match import approximate_canon, tsv_unescape_list

ROOT = Path(__file__).resolve().parents[1]

OUT = ROOT / "lever_jax" / "data" / "bundled"


def write_tar_xz(path: Path, members: dict[str, bytes]) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in sorted(members):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode, info.uid, info.gid = len(members[name]), 0, 0o644, 0, 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(members[name]))
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(lzma.compress(buf.getvalue(), preset=9 | lzma.PRESET_EXTREME))
    tmp.replace(path)


def read_tar(path: Path) -> dict[str, bytes]:
    out = {}
    with tarfile.open(path, "r:*") as tar:
        for m in tar:
            if m.isfile():
                out[m.name] = tar.extractfile(m).read()  # type: ignore[union-attr]
    return out


def unqualify(sql: str, db_id: str) -> str:
    """Drop MySQL database qualifiers (```db`.`table``` -> ```table```): in SQLite the prefix
    would name an attached schema. Affects 2 SpiderMan train queries."""
    return sql.replace(f"`{db_id}`.`", "`")


def bundle_spider(shared: Path) -> None:
    src, out = shared / "spider", OUT / "spider"
    out.mkdir(parents=True, exist_ok=True)
    with gzip.open(src / "dev.json.gz", "rt", encoding="utf-8") as f:
        dev = json.load(f)
    write_json_lines(out / "dev.jsonl.gz", ({"db_id": e["db_id"], "question": e["question"], "query": e["query"]} for e in dev))
    with gzip.open(src / "tables.json.gz", "rt", encoding="utf-8") as f:
        write_json(out / "tables.json.gz", json.load(f), indent=None)
    files = read_tar(src / "spiderman" / "spiderman_dataset_mysql.tar.gz")
    prefix = "dataset_mysql/"
    for name, target in (("test_queries.csv", "dev_spiderman.jsonl.gz"), ("train_queries.csv", "train.jsonl.gz")):
        rows = list(csv.DictReader(io.StringIO(files[prefix + name].decode("utf-8"), newline="")))
        write_json_lines(out / target, ({"db_id": r["database"], "question": r["question"],
                                         "query": unqualify(r["sql"], r["database"])} for r in rows))
    dev_dbs = {e["db_id"] for e in dev}
    dbs: dict[str, dict[str, bytes]] = {"dev": {}, "train": {}}
    for name, data in files.items():
        if not name.startswith(prefix + "databases/"):
            continue
        rel = name[len(prefix + "databases/"):]
        dbs["dev" if rel.split("/")[0] in dev_dbs else "train"][rel] = data
    for split, members in dbs.items():
        write_tar_xz(out / f"databases_{split}.tar.xz", members)
    for lic, target in (("LICENSE.taoyds-spider-repo-Apache-2.0", "LICENSE.spider-repo-Apache-2.0"),
                        ("spiderman/LICENSE", "LICENSE.spiderman-CC-BY-SA-4.0")):
        (out / target).write_bytes((src / lic).read_bytes())


def _wtq_rows(path: Path) -> list[dict[str, str]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def bundle_wikitq(shared: Path) -> None:
    src, out = shared / "wikitq", OUT / "wikitq"
    out.mkdir(parents=True, exist_ok=True)
    tagged = {r["id"]: r for r in _wtq_rows(src / "tagged" / "pristine-unseen-tables.tagged.gz")}
    for split, name in (("train", "random-split-1-train"), ("dev", "random-split-1-dev"), ("test", "pristine-unseen-tables")):
        records = []
        for r in _wtq_rows(src / "data" / f"{name}.tsv.gz"):
            ctx = r["context"]  # csv/204-csv/772.csv
            table_id = ctx.split("/")[1].split("-")[0] + "_" + ctx.split("/")[2].split(".")[0]
            targets = tsv_unescape_list(r["targetValue"])
            if split == "test":
                canon, source = tsv_unescape_list(tagged[r["id"]]["targetCanon"]), "corenlp"
            else:
                canon, source = [approximate_canon(t) for t in targets], "approx"
            records.append({"id": r["id"], "question": r["utterance"], "table_id": table_id, "targets": targets,
                            "target_canon": canon, "canon_source": source})
        write_json_lines(out / f"{split}.jsonl.gz", records)
    dbs = read_tar(src / "squall" / "squall_tables_db.tar.gz")
    write_tar_xz(out / "tables.tar.xz", {Path(k).name: v for k, v in dbs.items() if k.endswith(".db")})
    tables = {}
    for name, data in sorted(read_tar(src / "squall" / "squall_tables_json.tar.gz").items()):
        if not name.endswith(".json"):
            continue
        obj = json.loads(data)
        # Only the columns of table ``w`` (list-valued columns live in side tables t_<col>).
        cols = [c["col"] for group in obj["contents"] for c in group if not obj["is_list"].get(c["col"], False)]
        tables[Path(name).stem] = [list(p) for p in lever_column_names(obj["headers"], cols)]
    write_json(out / "columns.json.gz", {"convention": "see DATA_CARD.md", "tables": tables}, indent=None)
    (out / "LICENSE.WikiTableQuestions-CC-BY-SA-4.0").write_bytes((src / "LICENSE").read_bytes())
    (out / "LICENSE.squall-data-CC-BY-SA-4.0").write_bytes((src / "squall" / "LICENSE-data").read_bytes())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shared", type=Path, default=Path("/work/shared/data"))
    parser.add_argument("--only", choices=["spider", "wikitq"])
    args = parser.parse_args()
    if args.only in (None, "spider"):
        bundle_spider(args.shared)
    if args.only in (None, "wikitq"):
        bundle_wikitq(args.shared)
    return 0


if __name__ == "__main__":
    sys.exit(main())
