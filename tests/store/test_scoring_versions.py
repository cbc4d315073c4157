"""Issue 24 (5): scoring versions are data plus a registered function; a new version is backfilled beside the old,
idempotently and append-only, and the database guards what it can."""

from __future__ import annotations

import math
from datetime import date, datetime, timezone

import psycopg
import pytest
from psycopg.rows import dict_row

from forum_atlas.forecasting.lane import LaneQuestion
from forum_atlas.scoring import SCORING_VERSION
from forum_atlas.scoring.report import accuracy_report
from forum_atlas.scoring.rules import LOG_CLIP, log_score
from forum_atlas.scoring.versions import DEFAULT_VERSION, SCORING_RULES
from forum_atlas.store import forecasts as repo
from forum_atlas.store.db import verify_audit
from forum_atlas.tasks.forecasting import issue_bound_forecast
from forum_atlas.tasks.scoring import run_scoring
from tests.support.series import load_series_files

UTC = timezone.utc


def at(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


def backfill(db, version, **options):
    with db.transaction() as conn:
        return run_scoring(conn, mode="backfill", as_of=at(2026, 3, 31), scoring_version=version, **options)


@pytest.fixture
def cpi_revision(db, shared_data, tmp_path):
    """CPIAUCSL March 2025 > February, issued in March 2025 (on the 2025-04 download's rows without March), due
    2025-04-30: NO on the 2025-04 download (current at the deadline), YES after the revision in the 2026-03 one;
    scored by the nightly in brier-v1 on the newest vintage."""
    series = shared_data / "series"
    april = series / "CPIAUCSL__fred_vintage_2025-04.csv"
    march = tmp_path / "CPIAUCSL__fred_vintage_2025-03.csv"
    march.write_text("\n".join(line for line in april.read_text().splitlines() if not line.startswith("2025-03-01"))
                     + "\n")
    load_series_files(db, [march, april, series / "CPIAUCSL__fred_vintage_2026-03.csv"])
    issued = issue_bound_forecast(db, LaneQuestion(key="cpi-mar-up", series_id="CPIAUCSL", comparator=">",
                                                   reference="previous", target_date=date(2025, 3, 1),
                                                   deadline=at(2025, 4, 30)), at(2025, 3, 20), None, seed=11)
    with db.transaction() as conn:
        assert run_scoring(conn, mode="nightly", as_of=at(2026, 3, 31)).inserted == 1
    return issued["forecast_id"]


def test_the_database_holds_the_registry_s_data_and_the_state_view_names_no_version(db):
    with db.connection() as conn:
        rows = repo.registered_scoring_versions(conn)
        definition = conn.execute("SELECT pg_get_viewdef('forum.forecast_states_current') AS d").fetchone()["d"]
    assert [{k: r[k] for k in r if k != "is_default"} for r in rows] == \
        sorted((rule.data_row() for rule in SCORING_RULES.values()), key=lambda r: r["version"])
    assert [r["version"] for r in rows if r["is_default"]] == [DEFAULT_VERSION] == [SCORING_VERSION]
    assert not [v for v in SCORING_RULES if v in definition], definition
    assert next(r for r in rows if r["version"] == "log-v1")["clip"] == LOG_CLIP == 0.001


def test_the_state_view_follows_the_default_and_exactly_one_default_is_kept(db, cpi_revision, database_url):
    backfill(db, "log-v1")
    with psycopg.connect(database_url, autocommit=True, row_factory=dict_row) as conn:
        view = "SELECT state FROM forum.forecast_states_current WHERE forecast_id = %s"
        assert conn.execute(view, (cpi_revision,)).fetchone()["state"] == "resolved"
        conn.execute("UPDATE forum.scoring_versions SET is_default = (version = 'brier-v2')")
        assert conn.execute(view, (cpi_revision,)).fetchone()["state"] == "waiting_for_data"  # no brier-v2 score yet
        conn.execute("UPDATE forum.scoring_versions SET is_default = (version = 'brier-v1')")
        with pytest.raises(psycopg.errors.CheckViolation, match="exactly one scoring version is the default, not 0"):
            conn.execute("UPDATE forum.scoring_versions SET is_default = false")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="keeps its rule"):
            conn.execute("UPDATE forum.scoring_versions SET clip = 0.01 WHERE version = 'log-v1'")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only: DELETE refused"):
            conn.execute("DELETE FROM forum.scoring_versions WHERE version = 'brier-v2'")


def test_log_v1_is_backfilled_beside_brier_v1_once_and_verifies(db, cpi_revision):
    with db.connection() as conn:
        before = conn.execute("SELECT * FROM forum.forecast_scores ORDER BY score_id").fetchall()
    first, second = backfill(db, "log-v1"), backfill(db, "log-v1")
    assert (first.inserted, first.reproduced, second.inserted, second.reproduced) == (1, 0, 0, 1)
    with db.connection() as conn:
        rows = conn.execute("SELECT * FROM forum.forecast_scores ORDER BY score_id").fetchall()
        report = verify_audit(conn)
    assert rows[:len(before)] == before, "the brier-v1 rows are untouched"
    [brier_v1, log_v1] = rows
    assert (brier_v1["scoring_version"], brier_v1["log_score"], brier_v1["deadline_vintage_id"]) == ("brier-v1", None, None)
    assert log_v1["scoring_version"] == "log-v1" and log_v1["brier"] is None and log_v1["outcome"] == 1
    assert log_v1["log_score"] == -math.log(min(max(log_v1["probability"], LOG_CLIP), 1 - LOG_CLIP))
    assert report.intact, (report.chain, report.content)


def test_the_log_score_clips_certainty_at_one_in_a_thousand():
    import numpy as np

    scores = log_score(np.array([0.0, 1.0, 1.0, 0.5]), np.array([1, 0, 1, 0]))
    assert scores.tolist() == pytest.approx([-math.log(0.001)] * 2 + [-math.log(0.999), math.log(2)])
    assert scores[0] == pytest.approx(6.907755, abs=1e-6)


def test_brier_v2_keeps_the_deadline_vintage_s_outcome_beside_the_revised_one(db, cpi_revision):
    first, again = backfill(db, "brier-v2"), backfill(db, "brier-v2")
    assert (first.inserted, again.inserted, again.reproduced) == (1, 0, 1)
    with db.connection() as conn:
        vintages = {v["label"]: v["vintage_id"] for v in repo.list_vintages(conn, "CPIAUCSL")}
        [row] = conn.execute("SELECT * FROM forum.forecast_scores WHERE scoring_version = 'brier-v2'").fetchall()
        report = accuracy_report(repo.accuracy_rows(conn, "brier-v2"))
        assert verify_audit(conn).intact
    assert (row["vintage_id"], row["outcome"]) == (vintages["2026-03"], 1)      # current at scoring: YES
    assert (row["deadline_vintage_id"], row["deadline_outcome"]) == (vintages["2025-04"], 0)  # at the deadline: NO
    assert row["brier"] == pytest.approx((1 - row["probability"]) ** 2)
    assert report.deadline_outcomes == {"same": 0, "revised since": 1, "not known at the deadline": 0}
    assert ("  outcome on the deadline vintage: revised since", "1") in report.rows()


def test_accuracy_shows_the_chosen_version_and_every_version_beside_it(db, cpi_revision):
    backfill(db, "log-v1")
    with db.connection() as conn:
        log_report = accuracy_report(repo.accuracy_rows(conn, "log-v1"))
        default_report = accuracy_report(repo.accuracy_rows(conn))
    rows = dict(log_report.rows())
    assert rows["scoring version"] == "log-v1 (log)" and log_report.counts["resolved"] == 1
    assert float(rows["mean log score (nats)"]) > 0
    assert default_report.scoring_version == "brier-v1"
    summaries = {v.version: (v.scored, v.resolved) for v in default_report.versions}
    assert summaries == {"brier-v1": (1, 1), "log-v1": (1, 1), "brier-v2": (0, 0)}
    assert "version log-v1" in default_report.markdown() and "version brier-v1 (default)" in log_report.markdown()


def test_the_database_refuses_score_rows_that_break_their_version(db, cpi_revision):
    insert = """INSERT INTO forum.forecast_scores (forecast_id, scoring_version, vintage_id, status, outcome,
                       probability, brier, log_score, target_date, target_present, deadline_vintage_id)
                SELECT %s, %s, vintage_id, 'resolved', 1, 0.4, %s, %s, '2025-03-01', true, %s
                  FROM forum.series_vintages WHERE label = '2025-04'"""
    with db.connection() as conn:
        late = conn.execute("SELECT vintage_id FROM forum.series_vintages WHERE label = '2026-03'").fetchone()
    cases = [(("brier-v9", 0.36, None, None), psycopg.errors.ForeignKeyViolation, "no such scoring version"),
             (("log-v1", 0.36, None, None), psycopg.errors.ForeignKeyViolation, "belongs in its log_score column"),
             (("brier-v1", 0.36, None, late["vintage_id"]), psycopg.errors.ForeignKeyViolation,
              "records no deadline vintage"),
             (("brier-v2", 0.36, None, late["vintage_id"]), psycopg.errors.ForeignKeyViolation,
              "is not a full vintage of CPIAUCSL fetched by the deadline"),
             (("log-v1", 0.36, 0.9, None), psycopg.errors.CheckViolation, "one_score")]
    for (version, brier, log_score, deadline_vintage), error, message in cases:
        with pytest.raises(error, match=message), db.transaction() as conn:
            conn.execute(insert, (cpi_revision, version, brier, log_score, deadline_vintage))
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM forum.forecast_scores").fetchone()["n"] == 1
