"""One large record, end to end: does ingest scale with a record's size? (issue 10, item 3)

    python -m bench.large_record [--megabytes 1 4 10]

Each size is one JSONL record of plain English sentences, ingested by the flow (hashed embedder, the
per-record limit raised to fit) twice, each time into a new embedded database in a new process:
"seconds" into a database that is ready (created, migrated, server up, great-expectations imported:
what every ingest after an installation's first finds), "cold s" into one the flow itself must create
first. The reference is the database floor on the same chunks (bench.ingest: a bare COPY, the same
parallel analysis, the same vectors, the same HNSW build). A linear ingest keeps seconds per MB and
× floor flat as the record grows; the old quadratic offsets check took 396 s for 10 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from bench.ingest import _run

SENTENCE = "The grid operator reported that demand rose by 3 percent in the quarter. "


def write_record(path: Path, megabytes: float) -> Path:
    text = SENTENCE * (int(megabytes * 1_000_000) // len(SENTENCE))
    row = {"id": "big", "title": "Big", "text": text, "published_at": "2024-05-01",
           "source": {"name": "Gazette", "importance": 4, "quality_score": 4, "licence": "OGL-3.0"}}
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=float, nargs="*", default=[1, 4, 10])
    args = parser.parse_args()
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")   # slow under load (PLATFORM.md)
    os.environ["ATLAS_MAX_RECORD_BYTES"] = str(int(max(args.megabytes) * 1_000_000) + 1_000_000)
    header = (f"{'record MB':>10}{'chunks':>9}{'seconds':>9}{'s per MB':>10}{'index s':>9}{'floor s':>9}"
              f"{'x floor':>9}{'cold s':>9}")
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory(prefix="atlas-bench-large-") as folder:
        for megabytes in args.megabytes:
            record = write_record(Path(folder) / f"record-{megabytes:g}mb.jsonl", megabytes)
            result, cold = _run(record, ready=True), _run(record)
            s, floor = result["summary"], result["floor"]
            print(f"{megabytes:>10g}{s['chunks_added']:>9,}{s['seconds']:>9.1f}{s['seconds'] / megabytes:>10.2f}"
                  f"{s['index_seconds']:>9.1f}{floor['seconds']:>9.1f}{s['seconds'] / floor['seconds']:>9.2f}"
                  f"{cold['summary']['seconds']:>9.1f}")


if __name__ == "__main__":
    main()
