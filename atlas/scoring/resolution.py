"""Resolving bound questions against one vintage, vectorised over many forecasts (FC-6/7).

A question is `target <comparator> reference`, where the reference is a fixed threshold or the
value of another observation of the same series in the same vintage (month-over-month questions).
Comparators are explicit and strict ones mean strict: a tie under `>` resolves NO. A target or
reference observation that is empty in the vintage, or that the vintage does not reach, makes the
question **unresolvable** with that reason — never filled from a neighbouring period.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date

import numpy as np

COMPARATORS: dict[str, np.ufunc] = {">": np.greater, ">=": np.greater_equal, "<": np.less, "<=": np.less_equal}
UNRESOLVED = -1


def check_comparator(comparator: str) -> None:
    if comparator not in COMPARATORS:
        raise ValueError(f"comparator {comparator!r} is not one of {', '.join(COMPARATORS)}")


def compare(comparator: str, left: float, right: float) -> bool:
    check_comparator(comparator)
    return bool(COMPARATORS[comparator](left, right))


@dataclass(frozen=True)
class Resolutions:
    outcome: np.ndarray   # int8: 1 yes, 0 no, -1 unresolvable
    reason: list[str | None]


def _day(value: np.datetime64) -> date:
    return value.astype("datetime64[D]").astype(date)


def _missing_reason(role: str, when: date, present: bool, vintage: str, last_date: date) -> str:
    if present:
        return (f"{role} observation {when} is empty in vintage {vintage} (never published there); "
                "not forward-filled")
    return f"{role} observation {when} is not in vintage {vintage} (it ends at {last_date})"


def resolve(comparators: np.ndarray, target_value: np.ndarray, reference_value: np.ndarray, *,
            target_present: np.ndarray, reference_present: np.ndarray, target_dates: np.ndarray,
            reference_dates: np.ndarray, vintage_label: str, vintage_last_date: date) -> Resolutions:
    """Resolve n questions at once.

    `target_value`/`reference_value` are NaN where the vintage has no value (empty row or no row);
    `*_present` says whether the row exists at all, which only changes the wording of the reason.
    Dates are datetime64[D] arrays; for threshold questions `reference_value` holds the threshold
    and `reference_dates[i]` is NaT. All rows are read from the one vintage named.
    """
    n = len(comparators)
    unknown_comparator = ~np.isin(comparators, list(COMPARATORS))
    if unknown_comparator.any():
        raise ValueError(f"unknown comparators: {sorted(set(comparators[unknown_comparator]))}")
    outcome = np.full(n, UNRESOLVED, dtype=np.int8)
    known = ~np.isnan(target_value) & ~np.isnan(reference_value)
    for symbol, op in COMPARATORS.items():
        rows = known & (comparators == symbol)
        outcome[rows] = op(target_value[rows], reference_value[rows]).astype(np.int8)
    reason: list[str | None] = [None] * n
    for i in np.flatnonzero(~known):  # the few unresolvable rows get their words one by one
        parts = []
        if math.isnan(target_value[i]):
            parts.append(_missing_reason("target", _day(target_dates[i]), bool(target_present[i]),
                                         vintage_label, vintage_last_date))
        if math.isnan(reference_value[i]):
            parts.append(_missing_reason("reference", _day(reference_dates[i]), bool(reference_present[i]),
                                         vintage_label, vintage_last_date))
        reason[i] = "; ".join(parts)
    return Resolutions(outcome, reason)
