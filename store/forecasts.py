"""Repository for forecasts: series and vintages, forecasts and their bindings, versioned scores,
live states. Bulk paths (observations, scores, due bindings) move data with COPY, never row loops."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from datetime import date, datetime
from typing import Any

import numpy as np
import pandas as pd
import psycopg
from psycopg.rows import tuple_row
from psycopg.types.json import Jsonb

from forum_atlas.forecasting.backtest import SeriesSource
from forum_atlas.forecasting.binding import BoundQuestion
from forum_atlas.forecasting.drivers import SeriesView
from forum_atlas.forecasting.forecast import ForecastRecord
from forum_atlas.scoring import SCORING_VERSION
from forum_atlas.scoring.batch import SCORE_ROW_COLUMNS, VintageData
from forum_atlas.scoring.report import STATES, AccuracyRows
from forum_atlas.series.connectors.base import FetchedVintage
from forum_atlas.series.parsing import Observation
from forum_atlas.series.registry import SeriesInfo, SeriesRegistrationError, UnknownSeriesError
from forum_atlas.store.db import Database, record_event

# atlas.series.coverage.check_coverage: judges a new full vintage against its stored neighbours (FC-10)
CoverageCheck = Callable[[FetchedVintage, dict | None, dict | None], None]

# ---------------------------------------------------------------- series registry and vintages


def registered_series(conn: psycopg.Connection) -> list[SeriesInfo]:
    """Every registered series (forum.series): the ids forecasts may be bound to."""
    rows = conn.execute("SELECT series_id, title, frequency, units, publisher FROM forum.series ORDER BY series_id"
                        ).fetchall()
    return [SeriesInfo(**row) for row in rows]


def registered_info(conn: psycopg.Connection, series_id: str) -> SeriesInfo:
    """The registered series `series_id`; UnknownSeriesError, naming the known ids, if there is none."""
    registered = {info.series_id: info for info in registered_series(conn)}
    if series_id not in registered:
        raise UnknownSeriesError(series_id, registered)
    return registered[series_id]


def register_series(conn: psycopg.Connection, info: SeriesInfo) -> bool:
    """Register a series (validated by SeriesInfo); True if it is new. Registering the same id again
    with other fields is refused: bindings already cite the registered row."""
    row = conn.execute(
        """INSERT INTO forum.series (series_id, title, frequency, units, publisher, citation)
           VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (series_id) DO NOTHING RETURNING series_id""",
        (info.series_id, info.title, info.frequency, info.units, info.publisher, info.citation),
    ).fetchone()
    if row is None:
        existing = registered_info(conn, info.series_id)
        if existing != info:
            raise SeriesRegistrationError(f"series {info.series_id} is already registered as {existing}; nothing "
                                          "was changed")
        return False
    record_event(conn, "SERIES_REGISTERED", {"series_id": info.series_id, "title": info.title,
                                             "frequency": info.frequency, "units": info.units,
                                             "publisher": info.publisher})
    return True


def _vintage_dates(conn: psycopg.Connection, vintage_id: int) -> list[date]:
    cursor = conn.cursor(row_factory=tuple_row)
    return [r[0] for r in cursor.execute(
        "SELECT observation_date FROM forum.series_observations WHERE vintage_id = %s", (vintage_id,))]


def vintages_beside(conn: psycopg.Connection, fetched: FetchedVintage) -> tuple[dict | None, dict | None]:
    """The full vintages of the series fetched just before and just after `fetched` (by fetched_at), each with its
    observation dates as `dates`; None where there is none (FC-10's neighbours, atlas.series.coverage)."""
    before = conn.execute(
        """SELECT vintage_id, label FROM forum.series_vintages
            WHERE series_id = %s AND NOT partial AND fetched_at <= %s
            ORDER BY fetched_at DESC, vintage_id DESC LIMIT 1""",
        (fetched.series_id, fetched.fetched_at),
    ).fetchone()
    after = conn.execute(
        """SELECT vintage_id, label, fetched_at FROM forum.series_vintages
            WHERE series_id = %s AND NOT partial AND fetched_at > %s
            ORDER BY fetched_at, vintage_id LIMIT 1""",
        (fetched.series_id, fetched.fetched_at),
    ).fetchone()
    return tuple(None if row is None else {**row, "dates": _vintage_dates(conn, row["vintage_id"])}
                 for row in (before, after))


def store_vintage(conn: psycopg.Connection, fetched: FetchedVintage, *, check_coverage: CoverageCheck,
                  partial: bool = False) -> tuple[int, bool]:
    """Store a fetched vintage; the same content stored before is the same vintage.
    Returns (vintage_id, created). Raises UnknownSeriesError for a series outside the registry, and
    `check_coverage` (the caller's FC-10 rule, atlas.series.coverage.check_coverage) raises VintageCoverageError
    for a full vintage that covers less than its neighbours — with `partial`, such a file is stored as partial
    instead: kept, listed, never the newest vintage."""
    registered_info(conn, fetched.series_id)
    # one writer of a series' vintages at a time, so two loads cannot each pass the coverage check
    conn.execute("SELECT 1 FROM forum.series WHERE series_id = %s FOR UPDATE", (fetched.series_id,))
    existing = conn.execute(
        "SELECT vintage_id FROM forum.series_vintages WHERE series_id = %s AND content_hash = %s",
        (fetched.series_id, fetched.content_hash),
    ).fetchone()
    if existing is not None:
        return existing["vintage_id"], False
    if not partial:
        check_coverage(fetched, *vintages_beside(conn, fetched))
    observations = fetched.series.observations
    row = conn.execute(
        """INSERT INTO forum.series_vintages
             (series_id, label, fetched_at, connector, origin, content_hash, row_count, first_date, last_date,
              partial)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
           RETURNING vintage_id""",
        (fetched.series_id, fetched.label, fetched.fetched_at, fetched.connector, fetched.origin,
         fetched.content_hash, len(observations), observations[0].observation_date,
         observations[-1].observation_date, partial),
    ).fetchone()
    vintage_id = row["vintage_id"]
    with conn.cursor().copy(
        "COPY forum.series_observations (vintage_id, observation_date, value) FROM STDIN"
    ) as copy:
        for obs in observations:
            copy.write_row((vintage_id, obs.observation_date, obs.value))
    record_event(conn, "SERIES_VINTAGE_STORED", {
        "vintage_id": vintage_id, "series_id": fetched.series_id, "label": fetched.label,
        "content_hash": fetched.content_hash, "rows": len(observations), "origin": fetched.origin,
        "missing": [d.isoformat() for d in fetched.series.missing_dates], "partial": partial,
        "fetched_at": fetched.fetched_at.isoformat(),
    })
    return vintage_id, True


def list_vintages(conn: psycopg.Connection, series_id: str | None = None) -> list[dict[str, Any]]:
    return conn.execute(
        """SELECT v.vintage_id, v.series_id, v.label, v.fetched_at, v.connector, v.content_hash, v.row_count,
                  v.first_date, v.last_date, v.partial,
                  (SELECT count(*) FROM forum.series_observations o
                    WHERE o.vintage_id = v.vintage_id AND o.value IS NULL) AS missing
             FROM forum.series_vintages v
            WHERE %(s)s::text IS NULL OR v.series_id = %(s)s
            ORDER BY v.series_id, v.fetched_at, v.vintage_id""",
        {"s": series_id},
    ).fetchall()


def get_vintage(conn: psycopg.Connection, vintage_id: int) -> dict[str, Any] | None:
    return conn.execute("SELECT * FROM forum.series_vintages WHERE vintage_id = %s", (vintage_id,)).fetchone()


def latest_vintage(conn: psycopg.Connection, series_id: str, *, as_of: datetime | None = None) -> dict | None:
    """The newest full vintage of a series fetched no later than `as_of` (default: any time); a partial
    vintage is never the newest (FC-10)."""
    return conn.execute("SELECT * FROM forum.newest_vintage(%s, %s)", (series_id, as_of)).fetchone()


def vintage_observations(conn: psycopg.Connection, vintage_id: int) -> list[Observation]:
    rows = conn.execute(
        "SELECT observation_date, value FROM forum.series_observations WHERE vintage_id = %s ORDER BY observation_date",
        (vintage_id,),
    ).fetchall()
    return [Observation(r["observation_date"], r["value"]) for r in rows]


def backtest_source(conn: psycopg.Connection, series_id: str, vintage_id: int | None = None) -> SeriesSource:
    """A stored vintage (default: the newest full one) of a registered series, for the backtest."""
    info = registered_info(conn, series_id)
    vintage = get_vintage(conn, vintage_id) if vintage_id is not None else latest_vintage(conn, series_id)
    if vintage is None or vintage["series_id"] != series_id:
        which = f"vintage #{vintage_id}" if vintage_id is not None else "full vintage"
        raise ValueError(f"no stored {which} of {series_id}; load one with `atlas series load`")
    return SeriesSource(series_id, info.frequency, SeriesView.of(vintage_observations(conn, vintage["vintage_id"])),
                        f"{series_id} vintage {vintage['label']} (#{vintage['vintage_id']})")


def vintage_data(conn: psycopg.Connection, vintage: dict[str, Any]) -> VintageData:
    observations = vintage_observations(conn, vintage["vintage_id"])
    return VintageData(
        vintage_id=vintage["vintage_id"], series_id=vintage["series_id"], label=vintage["label"],
        fetched_at=vintage["fetched_at"],
        dates=np.array([o.observation_date for o in observations], dtype="datetime64[D]"),
        values=np.array([np.nan if o.value is None else o.value for o in observations], dtype=np.float64),
    )


def load_vintages(db: Database, fetched: Sequence[FetchedVintage], *, check_coverage: CoverageCheck,
                  partial: bool = False) -> list[dict[str, Any]]:
    """Store parsed vintages (atlas.series.connectors.file.read_series_files) in one transaction, once every series
    is known to be registered; content stored before is recognised and not stored again. A vintage covering less
    than the vintage before it refuses the whole load (VintageCoverageError, from `check_coverage`) unless
    `partial`: then every one is stored as partial (FC-10)."""
    results = []
    with db.transaction() as conn:
        for vintage in fetched:
            registered_info(conn, vintage.series_id)
        for vintage in fetched:
            vintage_id, created = store_vintage(conn, vintage, check_coverage=check_coverage, partial=partial)
            stored_partial = conn.execute("SELECT partial FROM forum.series_vintages WHERE vintage_id = %s",
                                          (vintage_id,)).fetchone()["partial"]
            results.append({"series_id": vintage.series_id, "label": vintage.label, "vintage_id": vintage_id,
                            "created": created, "partial": stored_partial,
                            "fetched_at": vintage.fetched_at, "rows": len(vintage.series.observations),
                            "missing": len(vintage.series.missing_dates), "content_hash": vintage.content_hash})
    return results


# ---------------------------------------------------------------- forecasts and bindings


def insert_forecast(conn: psycopg.Connection, record: ForecastRecord, *, run_id: str | None = None,
                    binding: BoundQuestion | None = None, issue_vintage_id: int | None = None) -> int:
    """Publish a forecast; with `binding`, bind it at issue in the same transaction (lane only)."""
    row = record.row()
    forecast_id = conn.execute(
        """INSERT INTO forum.forecasts (question, requested_via, issued_at, confidence_target, n_samples, seed,
               base_rate, probability, ci_low, ci_high, ci_method, ci_basis, distribution, drivers, engine, flow_run_id)
           VALUES (%(question)s, %(requested_via)s, %(issued_at)s, %(confidence_target)s, %(n_samples)s, %(seed)s,
               %(base_rate)s, %(probability)s, %(ci_low)s, %(ci_high)s, %(ci_method)s, %(ci_basis)s,
               %(distribution)s, %(drivers)s, %(engine)s, %(run_id)s)
           RETURNING forecast_id""",
        {**row, "distribution": Jsonb(row["distribution"]), "drivers": Jsonb(row["drivers"]),
         "engine": Jsonb(row["engine"]), "run_id": run_id},
    ).fetchone()["forecast_id"]
    payload: dict[str, Any] = {"forecast_id": forecast_id, "requested_via": record.requested_via,
                               "probability": record.result.probability, "seed": record.result.seed,
                               "n_samples": record.result.n_samples}
    if binding is not None:
        conn.execute(
            """INSERT INTO forum.forecast_bindings (forecast_id, question_key, series_id, comparator, threshold,
                   reference_date, target_date, deadline, bound_at, issue_vintage_id)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)""",
            (forecast_id, binding.key, binding.series_id, binding.comparator, binding.threshold,
             binding.reference_date, binding.target_date, binding.deadline, record.issued_at, issue_vintage_id),
        )
        payload["binding"] = binding.as_dict()
    record_event(conn, "FORECAST_BOUND" if binding is not None else "FORECAST_ISSUED", payload, run_id=run_id)
    return forecast_id


def binding_exists(conn: psycopg.Connection, key: str, target_date: date) -> bool:
    """Whether the question is bound already. Takes a transaction-scoped lock on (key, target date) first,
    so two lane runs at once (a manual run while the schedule fires) bind it once: the second waits for
    the first to commit, then finds its binding and reports "already bound" instead of a UniqueViolation."""
    conn.execute("SELECT pg_advisory_xact_lock(hashtext('forum.forecast_bindings'), hashtext(%s))",
                 (f"{key}@{target_date.isoformat()}",))
    return is_bound(conn, key, target_date)


def is_bound(conn: psycopg.Connection, key: str, target_date: date) -> bool:
    """Whether the question is bound already (a plain read: binding_exists locks first)."""
    return conn.execute("SELECT 1 FROM forum.forecast_bindings WHERE question_key = %s AND target_date = %s",
                        (key, target_date)).fetchone() is not None


def get_forecast(conn: psycopg.Connection, forecast_id: int) -> dict[str, Any] | None:
    return conn.execute(
        """SELECT f.*, b.question_key, b.series_id, b.comparator, b.threshold, b.reference_date, b.target_date,
                  b.deadline, b.bound_at
             FROM forum.forecasts f LEFT JOIN forum.forecast_bindings b USING (forecast_id)
            WHERE f.forecast_id = %s""",
        (forecast_id,),
    ).fetchone()


# ---------------------------------------------------------------- scoring


def _frame(conn: psycopg.Connection, query: str, params: Sequence[Any] | dict[str, Any]) -> pd.DataFrame:
    """A query's rows as a DataFrame, fetched as plain tuples (one round trip; no per-row dicts)."""
    cursor = conn.cursor(row_factory=tuple_row)
    rows = cursor.execute(query, params).fetchall()
    return pd.DataFrame(rows, columns=[c.name for c in cursor.description])


def _copied_frame(conn: psycopg.Connection, query: str, params: dict[str, Any], dtype: dict[str, Any],
                  dates: Sequence[str] = ()) -> pd.DataFrame:
    """A query's rows as a DataFrame through one CSV COPY parsed by pandas (100,000 rows: ~0.4 s, against ~1.2 s as
    Python row tuples): floats parsed round-trip exact, only an empty field is NULL (a text "NA" is not)."""
    text = io.BytesIO()
    with conn.cursor().copy(f"COPY ({query}) TO STDOUT WITH (FORMAT csv, HEADER)", params) as copy:
        for block in copy:
            text.write(block)
    text.seek(0)
    return pd.read_csv(text, dtype=dtype, parse_dates=list(dates), float_precision="round_trip",
                       keep_default_na=False, na_values=[""])


def due_bindings(conn: psycopg.Connection, *, as_of: datetime, deadline_from: datetime | None = None,
                 deadline_to: datetime | None = None, series_id: str | None = None) -> pd.DataFrame:
    """Bound forecasts whose deadline has passed at `as_of`, optionally with deadline in [from, to); dates as
    datetime64, the deadline as UTC."""
    frame = _copied_frame(
        conn,
        """SELECT b.forecast_id, f.probability, b.series_id, b.comparator, b.threshold, b.reference_date,
                  b.target_date, forum.epoch_us(b.deadline) AS deadline_us
             FROM forum.forecast_bindings b JOIN forum.forecasts f USING (forecast_id)
            WHERE b.deadline <= %(as_of)s
              AND (%(deadline_from)s::timestamptz IS NULL OR b.deadline >= %(deadline_from)s::timestamptz)
              AND (%(deadline_to)s::timestamptz IS NULL OR b.deadline < %(deadline_to)s::timestamptz)
              AND (%(series)s::text IS NULL OR b.series_id = %(series)s::text)
            ORDER BY b.forecast_id""",
        {"as_of": as_of, "deadline_from": deadline_from, "deadline_to": deadline_to, "series": series_id},
        dtype={"forecast_id": np.int64, "probability": np.float64, "series_id": str, "comparator": str,
               "threshold": np.float64, "deadline_us": np.int64},
        dates=["reference_date", "target_date"])
    return frame.assign(deadline=pd.to_datetime(frame.pop("deadline_us"), unit="us", utc=True))


_COMPARED = ("status", "outcome", "probability", "brier", "target_date", "target_present", "target_value",
             "reference_date", "reference_present", "reference_value", "reason", "log_score", "deadline_vintage_id",
             "deadline_outcome")


def write_scores(conn: psycopg.Connection, scores: pd.DataFrame, *, run_id: str | None = None) -> dict[str, int]:
    """Append score rows. A row for a (forecast, scoring version, vintage) that already has one is not
    written again; it must reproduce the stored row exactly, or the whole batch is refused (the rules
    changed without a new scoring version). Returns counts: inserted, reproduced."""
    if scores.empty:
        return {"inserted": 0, "reproduced": 0}
    columns = ", ".join(SCORE_ROW_COLUMNS)
    conn.execute("DROP TABLE IF EXISTS pg_temp.score_batch")
    conn.execute(f"CREATE TEMP TABLE score_batch ON COMMIT DROP AS SELECT {columns} FROM forum.forecast_scores "
                 "WITH NO DATA")
    # pandas writes floats with numpy's shortest round-trip repr, so values survive the text exactly. A column
    # empty in every row (a version's unused score column, the deadline columns of most versions) stays NULL
    # in score_batch without travelling as text.
    sent = [c for c in SCORE_ROW_COLUMNS if scores[c].notna().any()]
    text = scores[sent].to_csv(index=False, header=False, date_format="%Y-%m-%d", na_rep="")
    with conn.cursor().copy(f"COPY score_batch ({', '.join(sent)}) FROM STDIN WITH (FORMAT csv)") as copy:
        copy.write(text.encode("utf-8"))
    differs = " OR ".join(f"s.{c} IS DISTINCT FROM b.{c}" for c in _COMPARED)
    mismatch = conn.execute(
        f"""SELECT b.forecast_id, b.vintage_id, b.scoring_version FROM score_batch b
              JOIN forum.forecast_scores s USING (forecast_id, scoring_version, vintage_id)
             WHERE {differs} LIMIT 5"""
    ).fetchall()
    if mismatch:
        raise ValueError(f"re-scoring did not reproduce stored scores for {mismatch}: the resolution or scoring rules "
                         "changed without a new scoring version (or, for a version that records the deadline "
                         "vintage, a vintage fetched before the deadline was loaded since); nothing was written")
    inserted = conn.execute(
        f"""INSERT INTO forum.forecast_scores ({columns}, flow_run_id)
            SELECT {columns}, %s FROM score_batch ORDER BY forecast_id
            ON CONFLICT (forecast_id, scoring_version, vintage_id) DO NOTHING""",
        (run_id,),
    ).rowcount
    counts = {"inserted": inserted, "reproduced": len(scores) - inserted}
    record_event(conn, "FORECAST_SCORES_WRITTEN", {**counts, "vintages": sorted(int(v) for v in
                                                   scores["vintage_id"].unique())}, run_id=run_id)
    return counts


def current_scores(conn: psycopg.Connection, scoring_version: str) -> pd.DataFrame:
    return _copied_frame(
        conn,
        """SELECT forecast_id, scoring_version, vintage_id, vintage_label, status, outcome, probability, brier, reason,
                  log_score, deadline_vintage_id, deadline_outcome
             FROM forum.current_scores WHERE scoring_version = %(version)s ORDER BY forecast_id""",
        {"version": scoring_version},
        dtype={"forecast_id": np.int64, "scoring_version": str, "vintage_id": np.int64, "vintage_label": str,
               "status": str, "outcome": "Int64", "probability": np.float64, "brier": np.float64, "reason": str,
               "log_score": np.float64, "deadline_vintage_id": "Int64", "deadline_outcome": "Int64"})


def full_vintage_catalogue(conn: psycopg.Connection, series_ids: Sequence[str]) -> pd.DataFrame:
    """vintage_id, series_id, fetched_at of every full vintage of these series (partial ones are never used)."""
    return _frame(conn, """SELECT vintage_id, series_id, fetched_at FROM forum.series_vintages
                            WHERE series_id = ANY(%s) AND NOT partial ORDER BY series_id, fetched_at, vintage_id""",
                  (list(series_ids),))


def registered_scoring_versions(conn: psycopg.Connection) -> list[dict[str, Any]]:
    """forum.scoring_versions: each version's data row and whether it is the default."""
    return conn.execute("""SELECT version, measure, clip, records_deadline_vintage, description, is_default
                             FROM forum.scoring_versions ORDER BY version""").fetchall()


def scoring_versions_in_use(conn: psycopg.Connection) -> list[str]:
    """The default version first, then every other registered version that has score rows (one a data engineer
    backfilled): the versions the nightly keeps current."""
    return [r["version"] for r in conn.execute(
        """SELECT r.version FROM forum.scoring_versions r
            WHERE r.is_default OR EXISTS (SELECT 1 FROM forum.forecast_scores s WHERE s.scoring_version = r.version)
            ORDER BY r.is_default DESC, r.version""").fetchall()]


def version_summaries(conn: psycopg.Connection) -> pd.DataFrame:
    """Per registered version: forecasts with a current score in it, how many resolved, and the mean score over
    the resolved ones (in its measure's column)."""
    return _frame(
        conn,
        """SELECT r.version, r.measure, r.is_default, count(c.forecast_id) AS scored,
                  count(*) FILTER (WHERE c.status = 'resolved') AS resolved,
                  avg(CASE r.measure WHEN 'log' THEN c.log_score ELSE c.brier END) AS mean_score
             FROM forum.scoring_versions r LEFT JOIN forum.current_scores c ON c.scoring_version = r.version
            GROUP BY r.version, r.measure, r.is_default ORDER BY r.version""",
        (),
    )


def mislabelled_unresolvable(conn: psycopg.Connection, scoring_version: str) -> pd.DataFrame:
    """Current scores that say unresolvable on a vintage fetched by the forecast's deadline (written before
    issue 24 on a night whose fetch failed), with that vintage's fetched_at and the deadline. Found from the
    few unresolvable rows first, so a large score table is not read whole."""
    return _frame(
        conn,
        """SELECT c.forecast_id, c.vintage_id, c.status, v.fetched_at AS vintage_fetched_at, b.deadline
             FROM forum.forecast_bindings b
             CROSS JOIN LATERAL (
                   SELECT s.forecast_id, s.vintage_id, s.status FROM forum.forecast_scores s
                     JOIN forum.series_vintages sv USING (vintage_id)
                    WHERE s.forecast_id = b.forecast_id AND s.scoring_version = %(version)s
                    ORDER BY sv.fetched_at DESC, s.vintage_id DESC LIMIT 1) c
             JOIN forum.series_vintages v ON v.vintage_id = c.vintage_id
            WHERE c.status = 'unresolvable' AND v.fetched_at <= b.deadline
              AND b.forecast_id IN (SELECT u.forecast_id FROM forum.forecast_scores u
                                     WHERE u.scoring_version = %(version)s AND u.status = 'unresolvable')
            ORDER BY c.forecast_id""",
        {"version": scoring_version},
    )


def scores_for(conn: psycopg.Connection, forecast_id: int) -> list[dict[str, Any]]:
    return conn.execute(
        """SELECT s.*, v.label AS vintage_label, v.fetched_at AS vintage_fetched_at, v.content_hash
             FROM forum.forecast_scores s JOIN forum.series_vintages v USING (vintage_id)
            WHERE s.forecast_id = %s ORDER BY v.fetched_at, s.score_id""",
        (forecast_id,),
    ).fetchall()


def state_counts(conn: psycopg.Connection, scoring_version: str) -> dict[str, int]:
    rows = conn.execute(
        "SELECT state, count(*) AS n FROM forum.forecast_states(%s) GROUP BY state", (scoring_version,)
    ).fetchall()
    counts = dict.fromkeys(STATES, 0)
    counts.update({r["state"]: r["n"] for r in rows})
    return counts


def forecast_state(conn: psycopg.Connection, forecast_id: int, scoring_version: str) -> str | None:
    row = conn.execute("SELECT state FROM forum.forecast_states(%s) WHERE forecast_id = %s",
                       (scoring_version, forecast_id)).fetchone()
    return row["state"] if row else None


def last_bound_at(conn: psycopg.Connection) -> datetime | None:
    return conn.execute("SELECT max(bound_at) AS t FROM forum.forecast_bindings").fetchone()["t"]


def accuracy_rows(conn: psycopg.Connection, scoring_version: str = SCORING_VERSION) -> AccuracyRows:
    """What the Accuracy report of a scoring version is composed from (atlas.scoring.report.accuracy_report)."""
    return AccuracyRows(scoring_version=scoring_version, counts=state_counts(conn, scoring_version),
                        current=current_scores(conn, scoring_version), last_bound_at=last_bound_at(conn),
                        summaries=version_summaries(conn))
