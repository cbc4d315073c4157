"""The support-verifier interface (DEL-8).

`judge` takes (claim, quote, passage) triples — the claim as written, the verbatim span it cites,
and the whole passage — and returns one verdict per triple: supports, contradicts, contextual, or
abstain when the verifier cannot tell. A verifier that calls a provider also returns a
`CallRecord` per call (AUD-4); provider failures are raised as typed `ProviderError`s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from forum_atlas.calls import CallRecord, Verdict


@dataclass(frozen=True)
class SupportQuery:
    claim: str
    quote: str
    passage: str


@dataclass
class SupportJudgement:
    verdicts: list[Verdict]
    calls: list[CallRecord] = field(default_factory=list)


class SupportVerifier(Protocol):
    name: str
    version: str

    def judge(self, queries: Sequence[SupportQuery]) -> SupportJudgement: ...
