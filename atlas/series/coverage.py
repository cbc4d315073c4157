"""FC-10: a new vintage of a series must cover the dates of the vintage before it.

Values may be revised, and a period may be empty where the publisher marks it missing (an empty
field or '.', kept as an observation with no value), but a period the previous vintage had may not
be absent from the file. A vintage is compared with its neighbours on both sides by fetch time. One
fetched before a stored vintage must hold every period that later vintage holds from the new one's
first period to the last one already published when it was fetched: a download holds the series up
to its fetch time (a one-row file dated 2020 is no download of 2025). What "published" means is read
from the later vintage itself: its publication lag (its fetch date less its last period), plus one
period of margin for a lag that varies. Downloads may start at different periods (FRED's window).
A file that covers less is refused, unless it is loaded explicitly as partial: then it is kept and
listed but never used as the newest vintage.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from forum_atlas.series.parsing import Observation

if TYPE_CHECKING:
    from forum_atlas.series.connectors.base import FetchedVintage

_SHOWN = 5


class VintageCoverageError(ValueError):
    """A full vintage would regress: `lacking` are the dates it does not cover."""

    def __init__(self, message: str, lacking: list[date]):
        super().__init__(message)
        self.lacking = lacking


def uncovered_dates(covered: Iterable[date], covering: Iterable[Observation] | Iterable[date]) -> list[date]:
    """Dates of `covered` absent from `covering` (a date present with no value counts as covered)."""
    have = {o.observation_date if isinstance(o, Observation) else o for o in covering}
    return sorted(d for d in set(covered) if d not in have)


def published_by(later_dates: list[date], later_fetched_at: datetime, fetched_at: datetime) -> date | None:
    """The last period a download fetched at `fetched_at` must hold, as the later vintage (its sorted dates,
    its fetch time) shows: the periods out by then with its publication lag, less one period of margin.
    None when the later vintage has fewer than two dates (no period to read)."""
    if len(later_dates) < 2:
        return None
    lag = later_fetched_at.date() - later_dates[-1]
    return fetched_at.date() - lag - (later_dates[-1] - later_dates[-2])


def _dates(lacking: list[date]) -> str:
    shown = ", ".join(d.isoformat() for d in lacking[:_SHOWN])
    return shown + (f" (and {len(lacking) - _SHOWN} more)" if len(lacking) > _SHOWN else "")


_ADVICE = ("nothing was stored. A later download must cover every date of the earlier one (values may be "
           "revised or empty where the publisher marks them missing); to keep a deliberately partial file, "
           "load it with --partial (partial=True): it is listed but never used for binding, resolution or scoring")


def coverage_error(series_id: str, label: str, lacking: list[date], *, other_label: str, other_id: int,
                   later: bool = False, through: date | None = None) -> VintageCoverageError:
    """`later`: the new vintage holds dates the later vintage lacks; `through`: the new vintage, fetched before
    the later one, lacks dates that one holds up to `through` (published by the new one's fetch time)."""
    if through is not None:
        what = (f"{series_id} vintage {label!r} lacks {len(lacking)} date(s) up to {through.isoformat()} that the "
                f"later vintage {other_label!r} (#{other_id}) covers: {_dates(lacking)} (fetched earlier, it must "
                "hold every period from its first that was published when it was fetched, as that vintage's "
                "publication lag shows)")
    elif later:
        what = (f"{series_id} vintage {label!r} has {len(lacking)} date(s) that the later vintage "
                f"{other_label!r} (#{other_id}) lacks: {_dates(lacking)}")
    else:
        what = (f"{series_id} vintage {label!r} lacks {len(lacking)} date(s) that the previous newest vintage "
                f"{other_label!r} (#{other_id}) covers: {_dates(lacking)}")
    return VintageCoverageError(f"{what}; {_ADVICE}", lacking)


def check_coverage(fetched: FetchedVintage, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> None:
    """FC-10: refuse a full vintage that lacks a date of the full vintage before it (by fetched_at), or
    lacks a date the full vintage after it holds from the new one's first date to the last one published
    when it was fetched (`published_by`), or has a date the full vintage after it lacks. `before` and `after` are
    those neighbours (vintage_id, label, fetched_at and their observation `dates`), None where there is none. The
    database checks the same at commit (sql/031_vintage_coverage.sql); this is the same rule, with the readable
    message."""
    observations = fetched.series.observations
    if before is not None:
        lacking = uncovered_dates(before["dates"], observations)
        if lacking:
            raise coverage_error(fetched.series_id, fetched.label, lacking, other_label=before["label"],
                                 other_id=before["vintage_id"])
    if after is not None:
        later_dates = sorted(after["dates"])
        first, last = observations[0].observation_date, observations[-1].observation_date
        through = max(last, published_by(later_dates, after["fetched_at"], fetched.fetched_at) or last)
        lacking = uncovered_dates([d for d in later_dates if first <= d <= through], observations)
        if lacking:
            raise coverage_error(fetched.series_id, fetched.label, lacking, other_label=after["label"],
                                 other_id=after["vintage_id"], through=through)
        lacking = uncovered_dates([o.observation_date for o in observations], later_dates)
        if lacking:
            raise coverage_error(fetched.series_id, fetched.label, lacking, other_label=after["label"],
                                 other_id=after["vintage_id"], later=True)
