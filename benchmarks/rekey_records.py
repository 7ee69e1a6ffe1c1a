"""Re-key a results record folder from record schema 1 (cell key version 1) to schema 2, once.

    python benchmarks/rekey_records.py results/runs          # writes, then says what it did
    python benchmarks/rekey_records.py results/runs --check  # only says what it would do

Each schema-1 record's cell is rebuilt by ``bench.harness.legacy.cell_from_v1`` (from its stored
``config`` cell, else from its logged params, typed by the method's declared types) and checked
first: the version-1 key of the rebuilt cell must be the key the run was logged under, so the
migration reads exactly the cell the run was keyed by, or stops. The record is then written as
schema 2 — the typed cell, the split's sizes, the version-2 key (the logged keys kept as tags
``cell_key.v1``/``setup_key.v1``), every number, ledger, tag and code unchanged — under its new
file name, and the schema-1 file removed. Schema-2 records are left as they are, so the script can
be run again on a folder that gained schema-1 records (runs exported by older code).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.harness.legacy import cell_from_v1, v1_key
from bench.harness.record import SCHEMA, Code, Record, SplitFacts, rekeyed_tags
from bench.harness.record_json import loose

SCHEMA_1 = "dpbench.run-record/1"


def rekeyed(data: dict) -> Record:
    config, params, tags, ledger = data["config"], data["params"], data["tags"], data["ledger"]
    if data["kind"] != "cell":
        raise SystemExit(f"{data['label']}: an audit record; schema 1 kept none, so this script does not read one")
    logged = v1_key(config, params, tags, ledger)
    if logged != data["key"]:
        raise SystemExit(
            f"{data['label']}: the rebuilt cell has version-1 key {logged}, the record {data['key']}: "
            "not the cell the run was keyed by; nothing written for it"
        )
    cell = cell_from_v1(config, params, tags, ledger)
    plain = loose({name: value for name, value in data.items() if name not in ("config", "schema")})
    plain.update(
        schema=SCHEMA,
        key=cell.key,
        cell=cell,
        split=SplitFacts.from_logged(params),
        tags=rekeyed_tags(tags, cell),
        code=Code(**plain["code"]),
        metrics={k: float(v) for k, v in plain["metrics"].items()},
        timings={k: float(v) for k, v in plain["timings"].items()},
    )
    return Record(**plain)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="a record folder, e.g. results/runs")
    parser.add_argument("--check", action="store_true", help="read and check every record; write nothing")
    args = parser.parse_args(argv)
    moved = kept = 0
    for path in sorted(args.folder.glob("*/*.json")):
        data = json.loads(path.read_text())
        if data.get("schema") == SCHEMA:
            kept += 1
            continue
        if data.get("schema") != SCHEMA_1:
            raise SystemExit(f"{path}: schema {data.get('schema')!r}, neither {SCHEMA_1} nor {SCHEMA}")
        record = rekeyed(data)
        text = record.to_json()
        assert Record.from_json(text, str(path)).to_json() == text  # the codec reads back what it wrote
        if not args.check:
            target = path.parent / record.file_name()
            target.write_text(text)
            if target != path:
                path.unlink()
        moved += 1
    print(f"{'would re-key' if args.check else 're-keyed'} {moved} record(s); {kept} already schema 2")
    return 0


if __name__ == "__main__":
    sys.exit(main())
