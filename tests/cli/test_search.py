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


def test_search_prints_no_control_characters_from_source_text(db, database_url, tmp_path):
    """ESC, BEL and CR in a stored title or passage reach stdout as nothing: they would drive the terminal."""
    import re

    ingest(db, [record("a", "Insulin \x1b[2J resistance\x07 in muscle.\r", title="Muscle \x1b]0;owned\x07insulin",
                       sector="health")])
    done = run_cli_without_prefect(database_url, tmp_path, "search", "insulin resistance \x1b[31m")
    assert done.returncode == 0, done.stderr
    assert "Muscle ]0;ownedinsulin" in done.stdout and "Insulin [2J resistance in muscle." in done.stdout
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", done.stdout)


def test_an_argument_that_is_not_utf8_is_a_one_line_error(database_url, tmp_path):
    done = run_cli_without_prefect(database_url, tmp_path, "search", b"caf\xe9")
    assert done.returncode == 2
    assert done.stderr.strip() == 'atlas: error: argument 2 ("caf\\xe9") is not valid UTF-8; give it as UTF-8 text'


def test_the_same_paper_from_two_sources_is_one_hit_that_names_the_other(db, database_url, tmp_path):
    from dataclasses import replace

    from tests.support.corpus import TEST_SOURCE

    text = "Insulin resistance in skeletal muscle rises with age."
    ingest(db, [record("demo/paper.pdf", text, title="Muscle insulin", sector="health"),
                replace(record("mine/paper.pdf", text, title="Muscle insulin", sector="health"),
                        source=replace(TEST_SOURCE, name="my library")),
                record("pumps", "Insulin pumps for type 1 diabetes.", title="Pumps", sector="health")])
    done = run_cli_without_prefect(database_url, tmp_path, "search", "insulin resistance")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("] Muscle insulin") == 1 and "    also in: my library" in done.stdout
    as_json = json.loads(run_cli_without_prefect(database_url, tmp_path, "search", "insulin resistance", "--json").stdout)
    (paper,) = [s for s in as_json["sources"] if s["title"] == "Muscle insulin"]
    assert paper["source"] == "test source" and [c["source_name"] for c in paper["also_in"]] == ["my library"]
