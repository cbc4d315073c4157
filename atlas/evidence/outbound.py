"""De-identification of every query that leaves the platform (EVB-3).

`deliberation.deidentify` removes e-mail addresses, phone numbers and ID / record numbers; on top of
it this removes what the evidence router is also asked to guard: dates of birth (a date after "DOB",
"date of birth", "born") and the names of a supplied list (each full name, and each part of it of
three letters or more, so "Mrs Okafor" goes too). The report says what was removed — kind,
placeholder and a digest, never the value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from forum_atlas.deliberation.deidentify import deidentify, redaction_digest

_DATE = (r"(?:\d{1,2}[./-]\d{1,2}[./-]\d{2,4}|\d{4}-\d{2}-\d{2}|\d{1,2}(?:st|nd|rd|th)?\s+[A-Za-z]{3,9}\.?,?\s+\d{4}"
         r"|[A-Za-z]{3,9}\.?\s+\d{1,2}(?:st|nd|rd|th)?,?\s+\d{4})")
_DOB = re.compile(r"(?i)\b(?:d\.?o\.?b\.?|date\s+of\s+birth|birth\s*date|born(?:\s+on)?)\s*[:=]?\s*"
                  r"(?P<value>" + _DATE + ")")


@dataclass(frozen=True)
class OutboundRedaction:
    kind: str          # email | phone | id_number | date_of_birth | name
    placeholder: str
    digest: str


@dataclass(frozen=True)
class OutboundQuery:
    text: str
    removed: tuple[OutboundRedaction, ...]

    def report(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for redaction in self.removed:
            counts[redaction.kind] = counts.get(redaction.kind, 0) + 1
        return counts


def _name_patterns(names: Iterable[str]) -> list[re.Pattern[str]]:
    parts: set[str] = set()
    for name in names:
        name = " ".join(name.split())
        if name:
            parts.add(name)
            parts.update(p for p in re.split(r"[\s,.-]+", name) if len(p) >= 3)
    # Longest first, so a full name is replaced before its parts.
    return [re.compile(r"(?i)(?<!\w)" + re.escape(p) + r"(?!\w)") for p in sorted(parts, key=lambda p: (-len(p), p))]


def deidentify_query(text: str, *, names: Iterable[str] = (), secret: bytes | None = None) -> OutboundQuery:
    removed: list[OutboundRedaction] = []

    def replace(kind: str, placeholder: str):
        def swap(match: re.Match[str]) -> str:
            value = match.group("value") if "value" in match.re.groupindex else match.group(0)
            removed.append(OutboundRedaction(kind, placeholder, redaction_digest(value, secret)))
            return match.group(0).replace(value, placeholder)
        return swap

    # E-mail addresses first: a name inside one must not break the address apart before it is found.
    outbound, redactions = deidentify(text, secret=secret)
    removed += [OutboundRedaction(r.kind, r.placeholder, r.digest) for r in redactions]
    outbound = _DOB.sub(replace("date_of_birth", "[DOB]"), outbound)
    for pattern in _name_patterns(names):
        outbound = pattern.sub(replace("name", "[NAME]"), outbound)
    return OutboundQuery(outbound, tuple(removed))
