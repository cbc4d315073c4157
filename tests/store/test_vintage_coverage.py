"""FC-10: a new vintage of a series cannot silently regress — on the real FRED downloads."""

from __future__ import annotations

import os
import shutil
from datetime import date, datetime, timezone
from pathlib import Path

import psycopg
import pytest

from forum_atlas.forecasting.lane import LaneQuestion
from forum_atlas.scoring.report import accuracy_report
from forum_atlas.scoring.runs import ScoringInputError
from forum_atlas.series.connectors.file import MissingFetchTimeError
from forum_atlas.series.coverage import VintageCoverageError
from forum_atlas.store import forecasts as repo
from forum_atlas.tasks.forecasting import issue_bound_forecast
from forum_atlas.tasks.scoring import run_scoring
from tests.support.series import load_series_files

UTC = timezone.utc
FAR_FUTURE_MTIME = datetime(2031, 6, 1, tzinfo=UTC).timestamp()
REPRODUCTION = "observation_date,UNRATE\n2020-01-01,3.5\n"  # the user's one-line file


def at(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.fixture
def series(shared_data) -> Path:
    return shared_data / "series"


@pytest.fixture
def atlas_env(monkeypatch, database_url, tmp_path):
    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("ATLAS_LLM", "offline")


def vintage_count(db) -> int:
    with db.connection() as conn:
        return conn.execute("SELECT count(*) AS n FROM forum.series_vintages").fetchone()["n"]


def rewrite(source: Path, target: Path, *, drop: tuple[str, ...] = (), blank: tuple[str, ...] = ()) -> Path:
    """A real download with rows dropped (absent from the file) or blanked (published as missing)."""
    lines = []
    for line in source.read_text().splitlines():
        day = line.split(",")[0]
        if day in drop:
            continue
        lines.append(f"{day}," if day in blank else line)
    target.write_text("\n".join(lines) + "\n")
    return target


def accuracy(db) -> tuple[int, float]:
    with db.connection() as conn:
        report = accuracy_report(repo.accuracy_rows(conn))
    return report.counts["resolved"], report.metrics.brier


# ---------------------------------------------------------------- the reproduction, end to end


def test_reproduction_is_refused_and_partial_never_changes_accuracy(prefect_env, atlas_env, db, tmp_path, capsys):
    from forum_atlas.cli.forecast_demo import run_forecast_demo
    from forum_atlas.cli.main import main

    run_forecast_demo()
    before = accuracy(db)
    assert before[0] == 2
    with db.connection() as conn:
        scores_before = conn.execute("SELECT count(*) AS n FROM forum.forecast_scores").fetchone()["n"]
        newest = repo.latest_vintage(conn, "UNRATE")
    assert newest["label"] == "2026-03"
    stored = vintage_count(db)

    p = tmp_path / "p.csv"
    p.write_text(REPRODUCTION)
    os.utime(p, (FAR_FUTURE_MTIME, FAR_FUTURE_MTIME))  # the old code made this the newest vintage
    capsys.readouterr()
    # 1. exactly as the user ran it: no download time in the name, none given -> refused
    assert main(["series", "load", str(p)]) == 1
    err = capsys.readouterr().err
    assert "pass --fetched-at" in err and "modification time is not used" in err
    # 2. with a download time: it covers 1 of the 194 dates of 2026-03 -> refused, naming what it lacks
    assert main(["series", "load", str(p), "--fetched-at", "2026-04-01"]) == 1
    err = capsys.readouterr().err
    assert "lacks 193 date(s) that the previous newest vintage '2026-03'" in err
    assert "2010-01-01, 2010-02-01, 2010-03-01, 2010-04-01, 2010-05-01 (and 188 more)" in err
    assert "--partial" in err and "nothing was stored" in err
    assert vintage_count(db) == stored
    # the user's backfill then changes nothing
    assert main(["score", "backfill", "--from", "2025-01-01", "--to", "2026-12-31"]) == 0
    assert accuracy(db) == before

    # 3. --partial keeps it, lists it as partial, and it is never the newest vintage
    assert main(["series", "load", str(p), "--fetched-at", "2026-04-01", "--partial"]) == 0
    out = capsys.readouterr().out
    assert "partial" in out.splitlines()[-1] and "2026-04-01T00:00:00+00:00" in out
    assert main(["series", "list", "--series", "UNRATE"]) == 0
    listing = [line for line in capsys.readouterr().out.splitlines() if line.startswith(tuple("0123456789"))]
    assert [("partial" in line) for line in listing] == [False, False, True]
    with db.connection() as conn:
        assert repo.latest_vintage(conn, "UNRATE")["vintage_id"] == newest["vintage_id"]
        [partial] = [v for v in repo.list_vintages(conn, "UNRATE") if v["partial"]]
    assert partial["fetched_at"] == at(2026, 4, 1) and partial["row_count"] == 1
    assert main(["score", "backfill", "--from", "2025-01-01", "--to", "2026-12-31"]) == 0
    assert main(["score", "nightly"]) == 0
    assert accuracy(db) == before
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM forum.forecast_scores").fetchone()["n"] == scores_before
        used = conn.execute("SELECT DISTINCT vintage_id FROM forum.forecast_scores").fetchall()
    assert partial["vintage_id"] not in {r["vintage_id"] for r in used}
    # naming the partial vintage explicitly is refused too
    assert main(["score", "backfill", "--from", "2025-01-01", "--to", "2026-12-31",
                 "--vintage", str(partial["vintage_id"])]) == 1
    assert "is partial" in capsys.readouterr().err
    assert accuracy(db) == before


# ---------------------------------------------------------------- coverage on real downloads


def test_a_real_later_download_that_revises_values_is_accepted(db, series):
    results = load_series_files(db, [series / f"{s}__fred_vintage_{v}.csv" for s in ("UNRATE", "CPIAUCSL")
                                          for v in ("2025-04", "2026-03")])
    assert [(r["series_id"], r["label"], r["created"], r["partial"]) for r in results] == [
        ("UNRATE", "2025-04", True, False), ("UNRATE", "2026-03", True, False),
        ("CPIAUCSL", "2025-04", True, False), ("CPIAUCSL", "2026-03", True, False)]
    with db.connection() as conn:
        old, new = (repo.vintage_observations(conn, r["vintage_id"]) for r in results[2:])
    march = date(2025, 3, 1)
    assert {o.observation_date: o.value for o in old}[march] == 319.615
    assert {o.observation_date: o.value for o in new}[march] == 319.785  # revised, still covered


def test_loading_order_does_not_matter_for_real_downloads(db, series):
    results = load_series_files(db, [series / "UNRATE__fred_vintage_2026-03.csv",
                                          series / "UNRATE__fred_vintage_2025-04.csv"])
    assert all(r["created"] and not r["partial"] for r in results)
    with db.connection() as conn:
        assert repo.latest_vintage(conn, "UNRATE")["label"] == "2026-03"


def test_a_newer_file_lacking_a_date_is_refused_naming_it(db, series, tmp_path):
    load_series_files(db, [series / "UNRATE__fred_vintage_2026-03.csv"])
    lacking = rewrite(series / "UNRATE__fred_vintage_2026-03.csv", tmp_path / "UNRATE__fred_vintage_2026-04.csv",
                      drop=("2020-04-01",))
    with pytest.raises(VintageCoverageError, match=r"lacks 1 date\(s\) .*'2026-03' \(#\d+\) covers: 2020-04-01;") as err:
        load_series_files(db, [lacking])
    assert err.value.lacking == [date(2020, 4, 1)]
    assert vintage_count(db) == 1
    # the same period published as missing (an empty field) is not a regression
    blanked = rewrite(series / "UNRATE__fred_vintage_2026-03.csv", tmp_path / "UNRATE__fred_vintage_2026-05.csv",
                      blank=("2020-04-01",))
    [row] = load_series_files(db, [blanked])
    assert row["created"] and not row["partial"] and row["missing"] == 2
    # nor is a later file lacking a date stored as partial on purpose
    [kept] = load_series_files(db, [lacking], partial=True)
    assert kept["created"] and kept["partial"]
    with db.connection() as conn:
        assert repo.latest_vintage(conn, "UNRATE")["vintage_id"] == row["vintage_id"]


def test_an_older_file_the_newer_vintage_does_not_cover_is_refused(db, series, tmp_path):
    shorter = rewrite(series / "UNRATE__fred_vintage_2026-03.csv", tmp_path / "UNRATE__fred_vintage_2026-03.csv",
                      drop=("2015-06-01",))
    load_series_files(db, [shorter])
    with pytest.raises(VintageCoverageError, match=r"has 1 date\(s\) that the later vintage '2026-03'.*2015-06-01"):
        load_series_files(db, [series / "UNRATE__fred_vintage_2025-04.csv"])
    assert vintage_count(db) == 1


def test_an_older_one_row_file_is_refused_by_the_later_vintage(db, series, tmp_path):
    """Issue 25 (5): a one-row file loaded with a fetch time older than every stored vintage was stored as full.
    The later vintage 2025-04 (fetched 2025-04-01, last period 2025-03: a lag of 31 days, periods of a month)
    shows every month to 2024-11 out by 2025-01-01; the file holds only 2020-01."""
    load_series_files(db, [series / "UNRATE__fred_vintage_2025-04.csv", series / "UNRATE__fred_vintage_2026-03.csv"])
    stub = tmp_path / "p.csv"
    stub.write_text(REPRODUCTION)
    with pytest.raises(VintageCoverageError, match=r"'p' lacks 58 date\(s\) up to 2024-11-03 that the later vintage "
                                                   r"'2025-04' \(#\d+\) covers: 2020-02-01, 2020-03-01") as err:
        load_series_files(db, [stub], fetched_at=at(2025, 1, 1))
    assert err.value.lacking[-1] == date(2024, 11, 1)
    assert vintage_count(db) == 2
    # a real older download: a shorter window, ending where its fetch time allowed
    older = tmp_path / "UNRATE__fred_vintage_2020-02.csv"
    older.write_text("".join(line + "\n" for line in (series / "UNRATE__fred_vintage_2025-04.csv").read_text().splitlines()
                             if not line[:4].isdigit() or line < "2020-02"))
    [kept] = load_series_files(db, [older])
    assert kept["created"] and not kept["partial"] and kept["label"] == "2020-02"
    # as partial, the one-row file is kept, never the newest
    [partial] = load_series_files(db, [stub], fetched_at=at(2025, 1, 1), partial=True)
    assert partial["created"] and partial["partial"]


def test_the_newest_vintage_as_of_issue_skips_partial_ones(db, series, tmp_path):
    load_series_files(db, [series / "UNRATE__fred_vintage_2025-04.csv"])
    stub = tmp_path / "p.csv"
    stub.write_text(REPRODUCTION)
    load_series_files(db, [stub], fetched_at=at(2025, 4, 10), partial=True)
    issued = issue_bound_forecast(db, LaneQuestion(key="u", series_id="UNRATE", comparator=">",
                                                   reference="previous", target_date=date(2025, 4, 1)),
                                  at(2025, 4, 15), None, seed=1)
    assert issued["issue_vintage"] == "2025-04"


# ---------------------------------------------------------------- the database guards the same rules


def test_database_refuses_a_regressing_vintage_and_partial_scores(db, series):
    [full] = load_series_files(db, [series / "UNRATE__fred_vintage_2025-04.csv"])
    insert = """INSERT INTO forum.series_vintages (series_id, label, fetched_at, connector, origin, content_hash,
                    row_count, first_date, last_date, partial)
                VALUES ('UNRATE', 'sql', '2026-04-01Z', 'file', 'sql', repeat('a', 64), 1, '2020-01-01',
                        '2020-01-01', %s) RETURNING vintage_id"""
    with pytest.raises(psycopg.errors.CheckViolation, match=r"lacks 120 date\(s\) that the previous vintage 2025-04"):
        with db.transaction() as conn:
            vid = conn.execute(insert, (False,)).fetchone()["vintage_id"]
            conn.execute("INSERT INTO forum.series_observations VALUES (%s, '2020-01-01', 3.5)", (vid,))
    assert vintage_count(db) == 1
    older = insert.replace("2026-04-01Z", "2025-01-01Z")   # fetched before the stored vintage (issue 25)
    with pytest.raises(psycopg.errors.CheckViolation,
                       match=r"lacks 58 date\(s\) up to 2024-11-03 that the later vintage 2025-04 .*first: 2020-02-01"):
        with db.transaction() as conn:
            vid = conn.execute(older, (False,)).fetchone()["vintage_id"]
            conn.execute("INSERT INTO forum.series_observations VALUES (%s, '2020-01-01', 3.5)", (vid,))
    assert vintage_count(db) == 1
    with db.transaction() as conn:
        partial = conn.execute(insert, (True,)).fetchone()["vintage_id"]
        conn.execute("INSERT INTO forum.series_observations VALUES (%s, '2020-01-01', 3.5)", (partial,))
    issued = issue_bound_forecast(db, LaneQuestion(key="u", series_id="UNRATE", comparator=">", reference="previous",
                                                   target_date=date(2025, 4, 1)),
                                  at(2025, 4, 15), None, seed=1)
    with pytest.raises(psycopg.errors.CheckViolation, match="the vintage is partial"):
        with db.transaction() as conn:
            conn.execute("""INSERT INTO forum.forecast_scores (forecast_id, scoring_version, vintage_id, status,
                                probability, target_date, target_present, reason)
                            VALUES (%s, 'brier-v1', %s, 'unresolvable', 0.5, '2025-04-01', false, 'x')""",
                         (issued["forecast_id"], partial))
    with pytest.raises(ScoringInputError, match="is partial"):
        with db.transaction() as conn:
            run_scoring(conn, mode="backfill", as_of=at(2026, 5, 1), vintage_id=partial)
    with db.transaction() as conn:
        run = run_scoring(conn, mode="nightly", as_of=at(2026, 5, 1))
    # the full vintage is the one used; fetched before the deadline, it cannot yet say April (issue 24: waiting)
    assert run.vintages == {"UNRATE": full["vintage_id"]} and (run.due, run.waiting_for_data) == (1, 1)


# ---------------------------------------------------------------- where fetched_at comes from


def test_fetched_at_from_name_or_explicit_never_from_mtime(db, series, tmp_path):
    named = tmp_path / "UNRATE__fred_vintage_2025-04.csv"
    shutil.copy(series / "UNRATE__fred_vintage_2025-04.csv", named)
    os.utime(named, (FAR_FUTURE_MTIME, FAR_FUTURE_MTIME))
    [from_name] = load_series_files(db, [named])
    assert from_name["fetched_at"] == at(2025, 4, 1) and from_name["label"] == "2025-04"

    unnamed = tmp_path / "unrate-download.csv"
    shutil.copy(series / "UNRATE__fred_vintage_2026-03.csv", unnamed)
    os.utime(unnamed, (FAR_FUTURE_MTIME, FAR_FUTURE_MTIME))
    with pytest.raises(MissingFetchTimeError, match="pass --fetched-at"):
        load_series_files(db, [unnamed])
    assert vintage_count(db) == 1
    [explicit] = load_series_files(db, [unnamed], fetched_at=at(2026, 3, 12))
    with db.connection() as conn:
        stored = repo.get_vintage(conn, explicit["vintage_id"])
    assert stored["fetched_at"] == at(2026, 3, 12) and stored["label"] == "unrate-download"
