"""A failed command prints one line — no Prefect traceback; --verbose shows Prefect's log lines, and a traceback only
for an unexpected failure. Its run's log, in the Prefect API, holds INFO lines and the failure's cause in one line."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys


def atlas(tmp_path, *args):
    env = {**os.environ, "ATLAS_DATA_DIR": str(tmp_path / "data"), "PREFECT_HOME": str(tmp_path / "prefect")}
    for name in ("PREFECT_LOGGING_LEVEL", "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"):
        env.pop(name, None)  # the command's own default, not the test session's
    env.pop("PREFECT_API_URL", None)
    return subprocess.run([sys.executable, "-m", "forum_atlas.cli.main", *args], capture_output=True, text=True,
                          env=env, timeout=300)


def test_a_failing_flow_prints_one_line_and_its_run_log_holds_the_cause(tmp_path, database_url):
    os.environ["ATLAS_DATABASE_URL"] = database_url
    bad = tmp_path / "bad.jsonl"   # fails the run's check-input task (a missing file is refused before any flow)
    bad.write_text("{not json\n")
    failure = "InputError: bad.jsonl:1: not valid JSON (Expecting property name enclosed in double quotes at column 2)"
    try:
        quiet = atlas(tmp_path, "ingest", str(bad))
        loud = atlas(tmp_path, "-v", "ingest", str(bad))
    finally:
        del os.environ["ATLAS_DATABASE_URL"]
    assert quiet.returncode == 1
    lines = [line for line in quiet.stderr.splitlines() if line.strip() and "XDG_RUNTIME_DIR" not in line
             and "user_runtime_dir" not in line and not line.startswith("ingest: ")]   # not a TTY: a line per stage
    assert "ingest: checking the input" in quiet.stderr.splitlines()
    assert lines == [f"atlas: error: {failure.removeprefix('InputError: ')}"], quiet.stderr
    # -v: Prefect's lines on the terminal, the expected failure in one of them, and no traceback
    assert loud.returncode == 1 and "Traceback" not in loud.stderr, loud.stderr
    assert f"Task run failed: {failure}" in loud.stderr
    assert "Beginning flow run" in loud.stderr

    # what the CLI's shared Prefect API stored for both runs (in its PREFECT_HOME) before they ended
    with sqlite3.connect(tmp_path / "prefect" / "prefect.db") as prefect_db:
        logged = prefect_db.execute("SELECT level, message FROM log ORDER BY timestamp").fetchall()
    assert [m for level, m in logged if level == 40 and "run failed" in m] == [f"Task run failed: {failure}"] * 2
    assert sum(m.startswith("Beginning flow run") for level, m in logged if level == 20) == 2, "INFO reaches the API"
    assert not [m for _, m in logged if "Traceback" in m]


def test_a_bad_parameter_is_one_readable_line(tmp_path):
    done = atlas(tmp_path, "ask", "x")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == "atlas: error: question: String should have at least 3 characters"


def test_the_one_line_error_carries_the_notes_of_what_a_failure_left_behind():
    from forum_atlas.failures import one_line

    error = ValueError("batch 2: rows that failed validation\n| row | problem |")
    error.add_note("committed before this failure: batches 1–1 of a.jsonl through line 10 (+10 documents, …).")
    assert one_line(error) == ("batch 2: rows that failed validation | row | problem | committed before this failure: "
                                "batches 1–1 of a.jsonl through line 10 (+10 documents, …).")


def test_an_empty_or_blank_input_file_fails_in_one_line_and_records_nothing(tmp_path, database_url):
    """It used to exit 0 with "rows 0" and append an ingest event to the audit log."""
    import psycopg

    def events():
        with psycopg.connect(database_url) as conn:
            return conn.execute("SELECT count(*) FROM forum.events").fetchone()[0]

    before = events()
    os.environ["ATLAS_DATABASE_URL"] = database_url
    try:
        for name, content in (("empty.jsonl", ""), ("blank.jsonl", "  \n\t\n\n")):
            (tmp_path / name).write_text(content)
            done = atlas(tmp_path, "ingest", str(tmp_path / name))
            assert done.returncode == 1, done.stdout
            # (Prefect may log its own lines around it: not this check's concern)
            assert (f"atlas: error: {tmp_path / name}: the file is empty or holds only whitespace; there is nothing "
                    "to ingest") in done.stderr.splitlines(), done.stderr
            assert "Traceback" not in done.stderr
    finally:
        del os.environ["ATLAS_DATABASE_URL"]
    assert events() == before


def test_an_unusable_data_dir_is_refused_in_one_line(tmp_path):
    """A file gave "[Errno 17] File exists"; a `$` (which pg_ctl's shell expands even in its quotes) would start
    nothing. Each is refused in one line, and nothing is created or started. (A space works: test_pgserver.)"""
    (tmp_path / "file").write_text("")
    expected = {
        tmp_path / "file": f"the data directory {tmp_path / 'file'} is a file, not a directory",
        tmp_path / "file" / "sub": f"the data directory {tmp_path / 'file' / 'sub'} cannot be created: "
                                   f"{tmp_path / 'file'} is a file, not a directory",
        tmp_path / "a $HOME": f"the data directory '{tmp_path / 'a $HOME'}' contains '$', which the "
                              "embedded PostgreSQL cannot start from",
    }
    for data_dir, message in expected.items():
        env = {k: v for k, v in os.environ.items() if k != "ATLAS_DATABASE_URL"}
        done = subprocess.run([sys.executable, "-m", "forum_atlas.cli.main", "db", "status"], capture_output=True,
                              text=True, env={**env, "ATLAS_DATA_DIR": str(data_dir)}, timeout=120)
        assert done.returncode == 1
        [line] = done.stderr.strip().splitlines()
        assert line.startswith(f"atlas: error: {message}") and "ATLAS_DATA_DIR" in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]
