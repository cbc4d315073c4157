"""`atlas search` prints the final sources with their per-stage ranks, and never imports Prefect."""

import json

from tests.support.cli import run_cli_without_prefect
from tests.support.corpus import ingest, record


def test_search_prints_sources_with_stage_ranks(db, database_url, tmp_path):
    ingest(db, [record("a", "Insulin resistance in skeletal muscle.", title="Muscle insulin", sector="health"),
                record("b", "Solar output forecasts.", title="Solar", sector="energy"),
                record("c", "Insulin pumps for type 1 diabetes.", title="Pumps", sector="health")])
    done = run_cli_without_prefect(database_url, tmp_path, "search", "insulin resistance", "--top-k", "2")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    header = next(line for line in lines if line.startswith("#"))
    assert header.split()[:6] == ["#", "chunk", "bm25", "dense", "fused", "rerank"]
    first = lines[lines.index(header) + 2].split()
    assert first[0] == "1" and first[2] == "1" and first[5] == "1" and "Muscle" in done.stdout
    assert "bm25    postgresql-bm25okapi" in done.stdout

    as_json = run_cli_without_prefect(database_url, tmp_path, "search", "insulin", "--sector", "health", "--json")
    trace = json.loads(as_json.stdout)
    assert [s["stage"] for s in trace["stages"]] == ["bm25", "dense", "fusion", "rerank"]
    assert {s["sector"] for s in trace["sources"]} == {"health"}


def test_search_bad_input_is_a_one_line_error(db, database_url, tmp_path):
    ingest(db, [record("a", "insulin", sector="health")])
    empty = run_cli_without_prefect(database_url, tmp_path, "search", "   ")
    assert empty.returncode == 1 and empty.stderr.strip().endswith("the query is empty: give the words to search for")
    sector = run_cli_without_prefect(database_url, tmp_path, "search", "insulin", "--sector", "nope")
    assert sector.returncode == 1 and "unknown sector(s) 'nope'; the corpus has: health" in sector.stderr
    assert "Traceback" not in sector.stderr
    future = run_cli_without_prefect(database_url, tmp_path, "search", "insulin", "--since", "2999-01-01")
    assert future.returncode == 0 and "no sources: the recency window starts in the future" in future.stdout
