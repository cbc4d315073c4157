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
COPY, the same parallel analysis, the same vectors, the same HNSW build). A linear ingest keeps seconds
per MB and × floor flat as the record grows; the old quadratic offsets check took 396 s for 10 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from bench.ingest import _run
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
    header = (f"{'text':<10}{'record MB':>10}{'chunks':>9}{'seconds':>9}{'s per MB':>10}{'index s':>9}{'floor s':>9}"
              f"{'x floor':>9}{'holding one s':>15}{'auto chose':>12}{'other mode s':>14}{'cold s':>9}")
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory(prefix="atlas-bench-large-") as folder:
        for text in args.texts:
            for megabytes in args.megabytes:
                record = write_record(Path(folder) / f"{text}-{megabytes:g}mb.jsonl", megabytes, text)
                held = write_record(Path(folder) / f"{text}-{megabytes:g}mb-held.jsonl", megabytes, text, seed=2)
                result, holding = _run(record, ready=True), _run(record, ready=True, holding=held)
                other_mode = "incremental" if holding["summary"]["index_mode"] == "rebuild" else "rebuild"
                other = _run(record, ready=True, holding=held, index_mode=other_mode)["summary"]
                cold = None if args.no_cold else _run(record)
                s, floor, h = result["summary"], result["floor"], holding["summary"]
                print(f"{text:<10}{megabytes:>10g}{s['chunks_added']:>9,}{s['seconds']:>9.1f}{s['seconds'] / megabytes:>10.2f}"
                      f"{s['index_seconds']:>9.1f}{floor['seconds']:>9.1f}{s['seconds'] / floor['seconds']:>9.2f}"
                      f"{h['seconds']:>15.1f}{h['index_mode']:>12}{other['seconds']:>14.1f}"
                      f"{cold['summary']['seconds'] if cold else float('nan'):>9.1f}", flush=True)


if __name__ == "__main__":
    main()
