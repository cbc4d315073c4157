"""FC-10's coverage rule as a plain function: a new full vintage against its stored neighbours (no database)."""

from __future__ import annotations

from datetime import date, datetime, timezone

import pytest

from forum_atlas.series.connectors.base import FetchedVintage
from forum_atlas.series.coverage import VintageCoverageError, check_coverage
from forum_atlas.series.parsing import Observation, ParsedSeries

UTC = timezone.utc
MONTHS = [date(2024, m, 1) for m in range(1, 13)]


def vintage(dates, fetched_at=datetime(2025, 1, 15, tzinfo=UTC), missing=()) -> FetchedVintage:
    observations = tuple(Observation(d, None if d in missing else 4.0) for d in dates)
    return FetchedVintage(ParsedSeries("UNRATE", "new", observations), "new", fetched_at, "file", "new.csv")


def neighbour(dates, vintage_id=7, label="stored", fetched_at=datetime(2024, 6, 15, tzinfo=UTC)) -> dict:
    return {"vintage_id": vintage_id, "label": label, "fetched_at": fetched_at, "dates": list(dates)}


def test_a_vintage_without_neighbours_or_covering_them_passes():
    check_coverage(vintage(MONTHS), None, None)
    check_coverage(vintage(MONTHS), neighbour(MONTHS[:6]), None)
    # a period published as missing still covers it
    check_coverage(vintage(MONTHS, missing={MONTHS[3]}), neighbour(MONTHS[:6]), None)


def test_a_date_of_the_vintage_before_that_is_absent_is_refused_naming_it():
    with pytest.raises(VintageCoverageError, match=r"lacks 1 date\(s\) that the previous newest vintage 'stored' "
                                                   r"\(#7\) covers: 2024-04-01") as err:
        check_coverage(vintage([d for d in MONTHS if d != MONTHS[3]]), neighbour(MONTHS[:6]), None)
    assert err.value.lacking == [MONTHS[3]]


def test_the_vintage_after_bounds_what_an_earlier_download_must_hold():
    later = neighbour(MONTHS, fetched_at=datetime(2025, 1, 31, tzinfo=UTC))   # a lag of 61 days, monthly periods
    # fetched 2024-08-15 it must hold what was out by then less a period of margin: up to 2024-05-16
    check_coverage(vintage(MONTHS[:5], fetched_at=datetime(2024, 8, 15, tzinfo=UTC)), None, later)
    with pytest.raises(VintageCoverageError, match=r"lacks 2 date\(s\) up to 2024-05-16 that the later vintage "
                                                   r"'stored' \(#7\) covers: 2024-04-01, 2024-05-01"):
        check_coverage(vintage(MONTHS[:3], fetched_at=datetime(2024, 8, 15, tzinfo=UTC)), None, later)


def test_a_date_the_vintage_after_lacks_is_refused():
    later = neighbour(MONTHS[:6], fetched_at=datetime(2025, 2, 1, tzinfo=UTC))
    with pytest.raises(VintageCoverageError, match=r"has 1 date\(s\) that the later vintage 'stored' \(#7\) lacks: "
                                                   r"2023-12-01"):
        check_coverage(vintage([date(2023, 12, 1), *MONTHS[:6]], fetched_at=datetime(2024, 8, 1, tzinfo=UTC)),
                       None, later)
