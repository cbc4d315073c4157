"""Issue 24 (3): "could not fetch" is never "unresolvable". A forecast past its deadline whose only vintage was
fetched by the deadline stays pending (waiting for data); rows an older scorer wrote as unresolvable on such a
vintage read as waiting and are reclassified, append-only and with an event, when a later vintage settles them."""

from __future__ import annotations

from datetime import date, datetime, timezone

from forum_atlas.forecasting.lane import LaneQuestion
from forum_atlas.scoring import SCORING_VERSION
from forum_atlas.scoring.report import accuracy_report
from forum_atlas.store import forecasts as repo
from forum_atlas.tasks.forecasting import issue_bound_forecast
from forum_atlas.tasks.scoring import run_scoring
from tests.support.series import load_series_files

UTC = timezone.utc


def nightly(db, as_of):
    with db.transaction() as conn:
        return run_scoring(conn, mode="nightly", as_of=as_of, validate=False)


def test_waiting_for_data_until_a_vintage_fetched_after_the_deadline_settles_it(db, shared_data):
    series = shared_data / "series"
    load_series_files(db, [series / "UNRATE__fred_vintage_2025-04.csv"])
    june, july = (issue_bound_forecast(db, LaneQuestion(key=f"unrate-{m}", series_id="UNRATE", comparator=">",
                                                        reference="previous", target_date=date(2025, m, 1),
                                                        deadline=datetime(2025, 9, 1, tzinfo=UTC)),
                                       datetime(2025, 5, 20, tzinfo=UTC), None, seed=m)["forecast_id"]
                  for m in (6, 7))
    with db.transaction() as conn:   # what the scorer before issue 24 wrote on a night whose fetch failed
        old_vintage = repo.latest_vintage(conn, "UNRATE")["vintage_id"]
        conn.execute("""INSERT INTO forum.forecast_scores (forecast_id, scoring_version, vintage_id, status,
                            probability, target_date, target_present, reason)
                        VALUES (%s, %s, %s, 'unresolvable', 0.5, '2025-06-01', false, 'not in vintage 2025-04')""",
                     (june, SCORING_VERSION, old_vintage))

    offline = nightly(db, datetime(2025, 9, 2, tzinfo=UTC))   # FRED unreachable: only the April download
    assert (offline.due, offline.scored, offline.inserted, offline.waiting_for_data) == (2, 0, 0, 2)
    with db.connection() as conn:
        states = {fid: repo.forecast_state(conn, fid, SCORING_VERSION) for fid in (june, july)}
        report = accuracy_report(repo.accuracy_rows(conn))
    assert states == {june: "waiting_for_data", july: "waiting_for_data"}
    assert report.counts["waiting_for_data"] == 2 and report.counts["unresolvable"] == 0
    assert ("  pending: waiting for data", "2") in report.rows() and report.scoreable == 2

    load_series_files(db, [series / "UNRATE__fred_vintage_2026-03.csv"])   # the next good fetch
    good = nightly(db, datetime(2026, 3, 31, tzinfo=UTC))
    assert (good.inserted, good.resolved, good.reclassified, good.waiting_for_data) == (2, 2, 1, 0)
    with db.connection() as conn:
        assert [s["status"] for s in repo.scores_for(conn, june)] == ["unresolvable", "resolved"]   # append-only
        assert repo.state_counts(conn, SCORING_VERSION)["resolved"] == 2
        [event] = conn.execute("SELECT payload FROM forum.events WHERE kind = 'FORECASTS_RECLASSIFIED'").fetchall()
    [change] = event["payload"]["forecasts"]
    assert (change["forecast_id"], change["was"], change["was_vintage_id"], change["now"]) == (
        june, "unresolvable", old_vintage, "resolved")
    assert "not that it will never be published" in change["why"]
    assert nightly(db, datetime(2026, 4, 1, tzinfo=UTC)).inserted == 0
