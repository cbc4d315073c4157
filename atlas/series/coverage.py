"""FC-10: a new vintage of a series must cover the dates of the vintage before it.

Values may be revised, and a period may be empty where the publisher marks it missing (an empty
field or '.', kept as an observation with no value), but a period the previous vintage had may not
be absent from the file. A file that covers less is refused, unless it is loaded explicitly as
partial: then it is kept and listed but never used as the newest vintage.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date

from forum_atlas.series.parsing import Observation

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


def _dates(lacking: list[date]) -> str:
    shown = ", ".join(d.isoformat() for d in lacking[:_SHOWN])
    return shown + (f" (and {len(lacking) - _SHOWN} more)" if len(lacking) > _SHOWN else "")


_ADVICE = ("nothing was stored. A later download must cover every date of the earlier one (values may be "
           "revised or empty where the publisher marks them missing); to keep a deliberately partial file, "
           "load it with --partial (partial=True): it is listed but never used for binding, resolution or scoring")


def coverage_error(series_id: str, label: str, lacking: list[date], *, other_label: str, other_id: int,
                   later: bool = False) -> VintageCoverageError:
    if later:
        what = (f"{series_id} vintage {label!r} has {len(lacking)} date(s) that the later vintage "
                f"{other_label!r} (#{other_id}) lacks: {_dates(lacking)}")
    else:
        what = (f"{series_id} vintage {label!r} lacks {len(lacking)} date(s) that the previous newest vintage "
                f"{other_label!r} (#{other_id}) covers: {_dates(lacking)}")
    return VintageCoverageError(f"{what}; {_ADVICE}", lacking)
