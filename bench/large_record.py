"""One large record, end to end: does ingest scale with a record's size and its text? (issues 10, 25)

    python -m bench.large_record [--megabytes 1 4 10] [--texts sentence random] [--no-cold]

Each size is one JSONL record, of two kinds of text: the same English sentence repeated ("sentence": few
distinct terms, one embedding per distinct chunk text) and random-word sentences ("random": words drawn
from bench.synthetic_corpus's Zipfian vocabulary of 60,000, 6–24 words to a sentence — realistic text,
hundreds of thousands of distinct postings). Each record is ingested by the flow (hashed embedder, the
per-record limit raised to fit), each time into a new embedded database in a new process: "seconds" into
a database that is ready (created, migrated, server up, great-expectations imported: what every ingest
after an installation's first finds), "holding one s" into a ready database that already holds another
record of the same size and kind (index_mode=auto chooses how to index it; "other mode s" is the same
run with the mode auto did not choose, the reference for its choice), "cold s" into one the flow
itself must create first. The reference is the database floor on the same chunks (bench.ingest: a bare
COPY, the same parallel analysis, the same vectors, the same HNSW build), taken in the same process
right after the ingest it is the reference for; for "holding one" it covers the new record's chunks
only ("its floor s": its HNSW build is over the new vectors alone, while the ingest's index covers both
records). A linear ingest keeps seconds per MB and × floor flat as the record grows; the old quadratic
offsets check took 396 s for 10 MB. Targets (issue 25): 10 MB of random-word text in ≤ 10 s ready and
≤ 15 s holding one. Each row ends with the machine's load when it finished.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from bench.ingest import _run
from bench.report import load_line, table
from bench.synthetic_corpus import SyntheticCorpus

SENTENCE = "The grid operator reported that demand rose by 3 percent in the quarter. "


def _sentence_text(megabytes: float, seed: int) -> str:
    del seed   # one sentence: every record of this kind is the same text
    return SENTENCE * (int(megabytes * 1_000_000) // len(SENTENCE))


def _random_text(megabytes: float, seed: int) -> str:
    """Random-word sentences of about `megabytes` MB (UTF-8), deterministic for `seed`."""
    corpus = SyntheticCorpus(0, seed=seed)
    rng = np.random.default_rng(seed)
    size, sentences = int(megabytes * 1_000_000), []
    written = 0
    while written < size:
        indexes = np.searchsorted(corpus.cumulative, rng.random(int(rng.integers(6, 25))), side="right")
        words = [corpus.words[i] for i in indexes.clip(0, len(corpus.words) - 1)]
        sentence = " ".join(words).capitalize() + ". "
        sentences.append(sentence)
        written += len(sentence)
    return "".join(sentences)


TEXTS = {"sentence": _sentence_text, "random": _random_text}


def write_record(path: Path, megabytes: float, text: str = "sentence", seed: int = 1) -> Path:
    row = {"id": f"big-{seed}", "title": "Big", "text": TEXTS[text](megabytes, seed), "published_at": "2024-05-01",
           "source": {"name": "Gazette", "importance": 4, "quality_score": 4, "licence": "OGL-3.0"}}
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=float, nargs="*", default=[1, 4, 10])
    parser.add_argument("--texts", nargs="*", choices=sorted(TEXTS), default=["sentence", "random"])
    parser.add_argument("--no-cold", action="store_true", help="skip the cold runs")
    args = parser.parse_args()
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")   # slow under load (PLATFORM.md)
    os.environ["ATLAS_MAX_RECORD_BYTES"] = str(int(max(args.megabytes) * 1_000_000) + 1_000_000)
    rows = []
    with tempfile.TemporaryDirectory(prefix="atlas-bench-large-") as folder:
        for text in args.texts:
            for megabytes in args.megabytes:
                record = write_record(Path(folder) / f"{text}-{megabytes:g}mb.jsonl", megabytes, text)
                held = write_record(Path(folder) / f"{text}-{megabytes:g}mb-held.jsonl", megabytes, text, seed=2)
                ready, holding = _run(record, ready=True), _run(record, ready=True, holding=held)
                other_mode = "incremental" if holding["summary"]["index_mode"] == "rebuild" else "rebuild"
                other = _run(record, ready=True, holding=held, index_mode=other_mode)["summary"]
                cold = None if args.no_cold else _run(record)["summary"]["seconds"]
                s, h = ready["summary"], holding["summary"]
                rows.append((text, f"{megabytes:g}", f"{s['chunks_added']:,}", f"{s['seconds']:.1f}",
                             f"{s['seconds'] / megabytes:.2f}", f"{s['index_seconds']:.1f}", f"{ready['floor']['seconds']:.1f}",
                             f"{s['seconds'] / ready['floor']['seconds']:.2f}", f"{h['seconds']:.1f}", f"{h['index_seconds']:.1f}",
                             f"{holding['floor']['seconds']:.1f}", f"{h['seconds'] / holding['floor']['seconds']:.2f}",
                             h["index_mode"], f"{other['seconds']:.1f}", "" if cold is None else f"{cold:.1f}", load_line()))
                print(f"{text} {megabytes:g} MB done ({load_line()})", file=sys.stderr, flush=True)
    print(table(["text", "record MB", "chunks", "seconds", "s per MB", "index s", "floor s", "x floor",
                 "holding one s", "its index s", "its floor s", "its x floor", "auto chose", "other mode s", "cold s",
                 "load"], rows))

if __name__ == "__main__":
    main()
