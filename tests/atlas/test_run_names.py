"""Run names and artifact keys an operator searches the Prefect UI by (issue 37, 4)."""

from datetime import datetime, timezone

from forum_atlas.run_names import brief_index_markdown, brief_key, ingest_run_name, slug

QUESTION = "Does vitamin D supplementation reduce fracture risk in the elderly?"


def test_a_brief_key_carries_its_id_and_the_meaningful_words_of_its_question():
    assert brief_key(42, QUESTION) == "brief-42-vitamin-d-supplementation-reduce-fracture-risk"
    # Prefect's artifact keys: lowercase letters, digits and dashes only
    assert brief_key(7, "Ärzte & «Krankenhäuser»: 2024 | what's next?") == "brief-7-arzte-krankenhauser-2024-s-next"
    assert brief_key(3, "Is it?") == "brief-3-untitled"


def test_a_slug_stops_at_whole_words_within_its_width():
    long = "pneumonoultramicroscopicsilicovolcanoconiosis supercalifragilistic words"
    assert slug(long, width=48) == "pneumonoultramicroscopicsilicovolcanoconiosis"
    assert slug("x" * 80, width=48) == "x" * 48
    assert slug("one two three four five six seven eight") == "one-two-three-four-five-six"


def test_ingest_runs_are_named_after_their_source_else_their_input():
    assert ingest_run_name("/data/papers", "SciFact corpus (S2ORC abstracts)") == \
        "ingest-scifact-corpus-s2orc-abstracts"
    assert ingest_run_name("/data/scifact/corpus.jsonl", None) == "ingest-corpus-jsonl"


def test_the_brief_index_links_each_brief_and_its_run():
    rows = [{"brief_id": 9, "question": "Does | break\ntables?", "flow_run_id": "abc",
             "created_at": datetime(2026, 12, 7, 1, 2, tzinfo=timezone.utc)},
            {"brief_id": 8, "question": QUESTION, "flow_run_id": None,
             "created_at": datetime(2026, 12, 6, 23, 0, tzinfo=timezone.utc)}]
    lines = brief_index_markdown(rows, "http://127.0.0.1:4200").splitlines()
    assert lines[4] == ("| [brief-9-break-tables](http://127.0.0.1:4200/artifacts/key/brief-9-break-tables) | "
                        "2026-12-07 01:02 | Does \\| break tables? | [run](http://127.0.0.1:4200/runs/flow-run/abc) |")
    assert lines[5].endswith(f"| 2026-12-06 23:00 | {QUESTION} | - |")
    assert "| brief-9-break-tables | 2026-12-07 01:02 |" in brief_index_markdown(rows, None)
