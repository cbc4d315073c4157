"""Binding, resolution, versioned scoring and backfill on the real FRED downloads, in PostgreSQL."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime, timezone
from pathlib import Path

import pandas as pd
import psycopg
import pytest
from pydantic import ValidationError

from forum_atlas.forecasting.backtest import read_series_file
from forum_atlas.forecasting.binding import BindingError
from forum_atlas.forecasting.adaptive import ADAPTIVE_RULE_VERSION
from forum_atlas.forecasting.forecast import make_forecast
from forum_atlas.forecasting.lane import LaneQuestion
from forum_atlas.forecasting.montecarlo import ForecastInputError
from forum_atlas.scoring import SCORING_VERSION
from forum_atlas.scoring.report import accuracy_report
from forum_atlas.series.parsing import SeriesFormatError
from forum_atlas.series.registry import SeriesInfo, SeriesRegistrationError, UnknownSeriesError
from forum_atlas.store import forecasts as repo
from forum_atlas.tasks.forecasting import issue_bound_forecast
from forum_atlas.tasks.scoring import run_scoring
from tests.support.series import load_series_files

UTC = timezone.utc


def at(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


def counts(db) -> dict[str, int]:
    with db.connection() as conn:
        return {t: conn.execute(f"SELECT count(*) AS n FROM forum.{t}").fetchone()["n"]
                for t in ("series_vintages", "series_observations", "forecasts", "forecast_bindings",
                          "forecast_scores")}


def nightly(db, as_of):
    with db.transaction() as conn:
        return run_scoring(conn, mode="nightly", as_of=as_of)


def backfill(db, as_of, **options):
    with db.transaction() as conn:
        return run_scoring(conn, mode="backfill", as_of=as_of, **options)


def state(db, forecast_id):
    with db.connection() as conn:
        return repo.forecast_state(conn, forecast_id, SCORING_VERSION)


@pytest.fixture
def series(shared_data):
    return shared_data / "series"


@pytest.fixture
def march_2025_cpi(series, tmp_path) -> Path:
    """What was visible in March 2025: the April 2025 download without its March row (the rows
    themselves are the real ones)."""
    lines = (series / "CPIAUCSL__fred_vintage_2025-04.csv").read_text().splitlines()
    path = tmp_path / "CPIAUCSL__fred_vintage_2025-03.csv"
    path.write_text("\n".join(line for line in lines if not line.startswith("2025-03-01")) + "\n")
    return path


def test_cpi_feb_to_mar_resolves_no_then_yes_with_both_scores_kept(db, series, march_2025_cpi):
    load_series_files(db, [march_2025_cpi, series / "CPIAUCSL__fred_vintage_2025-04.csv"])
    question = LaneQuestion(key="cpi-mar-up", series_id="CPIAUCSL", comparator=">", reference="previous",
                            target_date=date(2025, 3, 1), deadline=at(2025, 4, 30))
    issued = issue_bound_forecast(db, question, at(2025, 3, 20), None, seed=11)
    fid = issued["forecast_id"]
    assert issued["issue_vintage"] == "2025-03"
    assert state(db, fid) == "waiting_for_data"   # states are live: its deadline has passed, it is not scored yet
    assert nightly(db, at(2025, 4, 29)).due == 0  # before the deadline nothing is due
    first = nightly(db, at(2025, 4, 30))
    assert (first.inserted, first.resolved) == (1, 1) and first.quality.success
    load_series_files(db, [series / "CPIAUCSL__fred_vintage_2026-03.csv"])
    assert nightly(db, at(2026, 3, 31)).inserted == 0  # resolved forecasts are not silently re-resolved
    second = backfill(db, at(2026, 3, 31), deadline_from=at(2025, 4, 1), deadline_to=at(2025, 5, 1))
    assert second.inserted == 1
    with db.connection() as conn:
        scores = repo.scores_for(conn, fid)
        current = repo.current_scores(conn, SCORING_VERSION)
    assert [(s["vintage_label"], s["outcome"]) for s in scores] == [("2025-04", 0), ("2026-03", 1)]
    old, new = scores
    assert (old["reference_value"], old["target_value"]) == (319.775, 319.615)  # down in the 2025-04 download
    assert (new["reference_value"], new["target_value"]) == (319.679, 319.785)  # up after revision
    assert (old["reference_date"], old["target_date"]) == (date(2025, 2, 1), date(2025, 3, 1))
    p = old["probability"]
    assert old["brier"] == pytest.approx(p ** 2) and new["brier"] == pytest.approx((1 - p) ** 2)
    assert current.set_index("forecast_id").loc[fid, "vintage_label"] == "2026-03"
    assert state(db, fid) == "resolved"
    # The same vintage again reproduces the old score exactly and adds nothing.
    again = backfill(db, at(2026, 3, 31), deadline_from=at(2025, 4, 1), deadline_to=at(2025, 5, 1),
                     vintage_id=old["vintage_id"])
    assert (again.inserted, again.reproduced) == (0, 1)


def test_unrate_october_unresolvable_and_a_tie_resolves_no(db, series):
    load_series_files(db, [series / "UNRATE__fred_vintage_2025-04.csv", series / "UNRATE__fred_vintage_2026-03.csv"])
    october = issue_bound_forecast(db, LaneQuestion(key="unrate-up", series_id="UNRATE", comparator=">",
                                                    reference="previous", target_date=date(2025, 10, 1)),
                                   at(2025, 4, 15), None, seed=1)
    april = issue_bound_forecast(db, LaneQuestion(key="unrate-up", series_id="UNRATE", comparator=">",
                                                  reference="previous", target_date=date(2025, 4, 1)),
                                 at(2025, 4, 15), None, seed=1)
    run = nightly(db, at(2026, 3, 31))
    assert (run.resolved, run.unresolvable) == (1, 1)
    with db.connection() as conn:
        [oct_score] = repo.scores_for(conn, october["forecast_id"])
        [apr_score] = repo.scores_for(conn, april["forecast_id"])
    assert oct_score["status"] == "unresolvable" and oct_score["outcome"] is None and oct_score["brier"] is None
    assert oct_score["target_present"] and oct_score["target_value"] is None
    assert oct_score["reference_value"] == 4.4  # September is there; October is not filled from it
    assert "2025-10-01 is empty in vintage 2026-03" in oct_score["reason"]
    assert (apr_score["target_value"], apr_score["reference_value"], apr_score["outcome"]) == (4.2, 4.2, 0)
    assert state(db, october["forecast_id"]) == "unresolvable"
    # an unresolvable forecast is retried nightly; with no newer vintage nothing changes
    assert nightly(db, at(2026, 4, 1)).inserted == 0


def test_direct_forecasts_are_unscoreable_and_cannot_be_bound(db, series):
    load_series_files(db, [series / "UNRATE__fred_vintage_2026-03.csv"])
    record = make_forecast("Will it rain?", base_rate=0.4, drivers=[], confidence_target=0.5,
                           issued_at=at(2025, 1, 2), requested_via="api", engine={}, seed=3)
    with db.transaction() as conn:
        fid = repo.insert_forecast(conn, record)
    assert nightly(db, at(2026, 3, 31)).due == 0
    with db.connection() as conn:
        assert repo.state_counts(conn, SCORING_VERSION) == {"unscoreable": 1, "pending": 0,
                                                            "waiting_for_data": 0, "resolved": 0,
                                                            "unresolvable": 0}
        assert conn.execute("SELECT state FROM forum.forecast_states_current").fetchone()["state"] == "unscoreable"
        report = accuracy_report(repo.accuracy_rows(conn))
    assert report.last_bound_at is None and report.metrics is None
    with pytest.raises(psycopg.errors.CheckViolation, match="direct forecasts are never bound"):
        with db.transaction() as conn:
            conn.execute("""INSERT INTO forum.forecast_bindings (forecast_id, question_key, series_id, comparator,
                                threshold, target_date, deadline, bound_at)
                            VALUES (%s, 'late', 'UNRATE', '>', 4, '2025-06-01', '2025-08-01', '2025-01-02')""", (fid,))
    with pytest.raises(psycopg.errors.ForeignKeyViolation, match="only bound forecasts are scored"):
        with db.transaction() as conn:
            conn.execute("""INSERT INTO forum.forecast_scores (forecast_id, scoring_version, vintage_id, status,
                                outcome, probability, brier, target_date, target_present)
                            SELECT %s, 'brier-v1', vintage_id, 'resolved', 1, 0.4, 0.36, '2025-06-01', true
                              FROM forum.series_vintages""", (fid,))


def test_scores_and_forecasts_are_append_only(db, series):
    load_series_files(db, [series / "UNRATE__fred_vintage_2025-04.csv", series / "UNRATE__fred_vintage_2026-03.csv"])
    issue_bound_forecast(db, LaneQuestion(key="u", series_id="UNRATE", comparator=">", reference="previous",
                                          target_date=date(2025, 4, 1)), at(2025, 4, 15), None, seed=1)
    nightly(db, at(2026, 3, 31))
    for statement in ("UPDATE forum.forecast_scores SET outcome = 1", "DELETE FROM forum.forecast_scores",
                      "UPDATE forum.forecasts SET probability = 0.5", "DELETE FROM forum.forecast_bindings",
                      "UPDATE forum.series_observations SET value = 0", "TRUNCATE forum.forecast_scores CASCADE"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"):
            with db.transaction() as conn:
                conn.execute(statement)


def test_lane_is_idempotent_and_records_the_issue(db, series):
    load_series_files(db, [series / "UNRATE__fred_vintage_2025-04.csv"])
    spec = LaneQuestion(key="u", series_id="UNRATE", comparator=">", reference="previous")
    assert issue_bound_forecast(db, spec, at(2025, 4, 15), None)["status"] == "bound"
    assert issue_bound_forecast(db, spec, at(2025, 4, 16), None)["status"] == "already bound"
    with db.connection() as conn:
        assert repo.last_bound_at(conn) == at(2025, 4, 15)
        kinds = [r["kind"] for r in conn.execute("SELECT kind FROM forum.events ORDER BY event_id")]
    assert kinds == ["SERIES_VINTAGE_STORED", "FORECAST_BOUND"]


@pytest.mark.parametrize("spec, error, message", [
    (dict(confidence_target=1.0), ForecastInputError, "strictly between 0 and 1"),
    (dict(confidence_target=0.0), ForecastInputError, "strictly between 0 and 1"),
    (dict(series_id="NOTASERIES"), BindingError, "unknown series id"),
    (dict(deadline=at(2025, 4, 1)), BindingError, "is not after the issue time"),
    (dict(reference=None, threshold=float("nan")), BindingError, "threshold must be a finite number"),
])
def test_bad_lane_input_writes_nothing(db, series, spec, error, message):
    load_series_files(db, [series / "UNRATE__fred_vintage_2025-04.csv"])
    before = counts(db)
    fields = {"key": "u", "series_id": "UNRATE", "comparator": ">", "reference": "previous", **spec}
    if "confidence_target" in spec:   # the run form refuses it first; the binding refuses it too
        with pytest.raises(ValidationError, match="confidence_target"):
            LaneQuestion(**fields)
    question = LaneQuestion.model_construct(**fields)
    with pytest.raises(error, match=message):
        issue_bound_forecast(db, question, at(2025, 4, 15), None)
    assert counts(db) == before


def test_bad_series_files_write_nothing(db, series, tmp_path):
    garbage = tmp_path / "UNRATE__fred_vintage_2026-04.csv"
    garbage.write_text("observation_date,UNRATE\n2026-01-01,4.3\n2026-02-01,n/a\n")
    unknown = tmp_path / "FOO__fred_vintage_2026-02.csv"
    unknown.write_text("observation_date,FOO\n2026-01-01,1\n")
    good = series / "UNRATE__fred_vintage_2025-04.csv"
    with pytest.raises(SeriesFormatError, match="line 3"):
        load_series_files(db, [good, garbage])
    with pytest.raises(UnknownSeriesError):
        load_series_files(db, [good, unknown])
    assert counts(db)["series_vintages"] == 0
    first = load_series_files(db, [good])
    again = load_series_files(db, [good])
    assert first[0]["created"] and not again[0]["created"] and first[0]["vintage_id"] == again[0]["vintage_id"]
    assert counts(db)["series_observations"] == 121


def _fred_csv(path: Path, series_id: str, dates, values) -> Path:
    path.write_text(f"observation_date,{series_id}\n" + "".join(f"{d},{v:g}\n" for d, v in zip(dates, values)))
    return path


def test_a_registered_new_series_binds_and_resolves(db, series, tmp_path):
    """The registry is data: a series registered at run time loads, binds and resolves like the
    seeded four. Its rows are real: the unemployment column of the quarterly statsmodels table."""
    macro = read_series_file(series / "statsmodels_macrodata_1959Q1-2009Q3.csv", "unemp").view
    dates = macro.dates.astype(date)
    before_2009 = dates < date(2009, 1, 1)
    older = _fred_csv(tmp_path / "MACROUNEMP__fred_vintage_2009-01.csv", "MACROUNEMP", dates[before_2009],
                      macro.values[before_2009])
    newer = _fred_csv(tmp_path / "MACROUNEMP__fred_vintage_2009-11.csv", "MACROUNEMP", dates, macro.values)
    spec = LaneQuestion(key="macro-unemp-up", series_id="MACROUNEMP", comparator=">", reference="previous")
    with pytest.raises(UnknownSeriesError, match="known series are CPIAUCSL, DGS10, FEDFUNDS, UNRATE"):
        load_series_files(db, [older])
    with pytest.raises(BindingError, match="unknown series id 'MACROUNEMP': known series are CPIAUCSL, DGS10"):
        issue_bound_forecast(db, spec, at(2009, 2, 1), None)
    info = SeriesInfo("MACROUNEMP", "US unemployment rate, quarterly (statsmodels macrodata)", "quarterly",
                      "percent", "statsmodels (public domain), from U.S. Bureau of Labor Statistics")
    with db.transaction() as conn:
        assert repo.register_series(conn, info)
        assert not repo.register_series(conn, info)  # the same row again: nothing to do
        with pytest.raises(SeriesRegistrationError, match="already registered"):
            repo.register_series(conn, replace(info, units="per cent of the labour force"))
    load_series_files(db, [older, newer])
    bound = issue_bound_forecast(db, spec, at(2009, 2, 1), None, seed=5)
    with db.connection() as conn:
        row = repo.get_forecast(conn, bound["forecast_id"])
        assert [s.series_id for s in repo.registered_series(conn)] == ["CPIAUCSL", "DGS10", "FEDFUNDS", "MACROUNEMP", "UNRATE"]
    assert (row["target_date"], row["reference_date"]) == (date(2009, 1, 1), date(2008, 10, 1))
    assert row["engine"]["drivers"] == ADAPTIVE_RULE_VERSION
    # the published probability says which base rate it came from, and its held-out record
    assert {"base_rate_candidates", "held_out_brier_gain", "recalibrated"} <= set(row["engine"]["base_rate"])
    run = nightly(db, at(2009, 11, 2))
    assert (run.resolved, run.unresolvable) == (1, 0)
    with db.connection() as conn:
        [score] = repo.scores_for(conn, bound["forecast_id"])
    assert (score["reference_value"], score["target_value"], score["outcome"]) == (6.9, 8.1, 1)


def test_targets_that_cannot_exist_are_refused_and_nothing_is_written(db, series):
    load_series_files(db, [series / "UNRATE__fred_vintage_2025-04.csv"])
    before = counts(db)
    mid_month = LaneQuestion(key="u", series_id="UNRATE", comparator=">", threshold=4.0, target_date=date(2025, 6, 15))
    with pytest.raises(BindingError, match="2025-06-15 is not an observation date of a monthly series"):
        issue_bound_forecast(db, mid_month, at(2025, 4, 15), None)
    assert counts(db) == before


def test_two_lane_runs_binding_the_same_question_at_once_bind_it_once(db, series):
    """Issue 13 (1): the loser of the race reports "already bound", never a UniqueViolation."""
    import threading

    load_series_files(db, [series / "UNRATE__fred_vintage_2026-03.csv"])
    question = LaneQuestion(key="unrate-race", series_id="UNRATE", comparator=">", reference="previous",
                            target_date=date(2026, 6, 1), deadline=at(2026, 8, 31))
    for trial in range(3):
        spec = question.model_copy(update={"key": f"unrate-race-{trial}"})
        barrier, outcomes = threading.Barrier(2, timeout=60), []

        def bind(spec=spec, barrier=barrier, outcomes=outcomes):
            barrier.wait()
            try:
                outcomes.append(issue_bound_forecast(db, spec, at(2026, 4, 15), None, seed=1)["status"])
            except Exception as exc:  # noqa: BLE001 — asserted below
                outcomes.append(f"{type(exc).__name__}: {exc}")

        threads = [threading.Thread(target=bind) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(outcomes) == ["already bound", "bound"], outcomes


def test_due_bindings_and_current_scores_read_through_copy_equal_the_stored_rows(db, series):
    """The two bulk reads of scoring go through a CSV COPY parsed by pandas: every value equals the row as psycopg
    reads it (floats bit for bit, dates, the deadline instant, NULLs), for a threshold and a reference question."""
    load_series_files(db, [series / "UNRATE__fred_vintage_2025-04.csv", series / "UNRATE__fred_vintage_2026-03.csv"])
    for spec in (LaneQuestion(key="up", series_id="UNRATE", comparator=">", reference="previous",
                              target_date="2025-06-01", deadline="2025-08-01T06:30:00.123456+02:00"),
                 LaneQuestion(key="below", series_id="UNRATE", comparator="<", threshold=4.15,
                              target_date="2025-07-01", deadline="2025-09-01T00:00:00Z")):
        issue_bound_forecast(db, spec, at(2025, 4, 20), None, seed=7)
    nightly(db, at(2026, 3, 31))
    with db.connection() as conn:
        due = repo.due_bindings(conn, as_of=at(2026, 3, 31))
        stored = conn.execute("""SELECT b.forecast_id, f.probability, b.series_id, b.comparator, b.threshold,
                                        b.reference_date, b.target_date, b.deadline
                                   FROM forum.forecast_bindings b JOIN forum.forecasts f USING (forecast_id)
                                  ORDER BY b.forecast_id""").fetchall()
        current = repo.current_scores(conn, SCORING_VERSION)
        views = conn.execute("SELECT * FROM forum.current_scores ORDER BY forecast_id").fetchall()

    def plain(value):
        if value is None or (isinstance(value, float) and value != value) or value is pd.NA or value is pd.NaT:
            return None
        if isinstance(value, pd.Timestamp):
            return value.to_pydatetime() if value.tzinfo else value.date()
        return value.item() if hasattr(value, "item") else value

    assert [{k: plain(v) for k, v in row.items()} for row in due.to_dict("records")] == stored
    assert stored[0]["deadline"] == datetime(2025, 8, 1, 4, 30, 0, 123456, tzinfo=UTC)
    assert [{k: plain(v) for k, v in row.items()} for row in current.to_dict("records")] == \
        [{k: row[k] for k in current.columns} for row in views]
    assert {row["status"] for row in views} == {"resolved"} and views[0]["deadline_vintage_id"] is None
