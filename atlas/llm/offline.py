"""The deterministic offline engine (the default; no network, no keys).

Rule: the question's content words (lower-cased words of 4+ letters outside a stop list, in order
of first appearance, at most three) each become one driver hypothesis, "<word> moves the outcome",
with effect 0, spread 0.5 log-odds and equal weights summing to 1. Without a model nothing here can
judge direction, so the forecast stays centred on the base rate and its spread states that
ignorance; evidence is still retrieved and cited per driver. Same question, same drivers.
"""

from __future__ import annotations

import re

from forum_atlas.forecasting.montecarlo import Driver

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9\-]{3,}")
_STOP = frozenset("""will would could should does have been being from into over under than that this
these those with what when where which while about after before their there they them then also more
most less least very much many such only other some your ours ever next last year years month months
week weeks day days time between during within without whether""".split())
MAX_TERMS = 3
IGNORANCE_SD = 0.5


class OfflineDriverEngine:
    name = "offline-rule"
    version = "content-words-v1"

    def propose_drivers(self, question: str, *, base_rate: float) -> list[Driver]:
        terms: list[str] = []
        for word in _WORD.findall(question):
            lowered = word.lower()
            if lowered not in _STOP and lowered not in terms:
                terms.append(lowered)
        terms = terms[:MAX_TERMS] or ["status quo"]
        weight = 1.0 / len(terms)
        return [Driver(name=term, hypothesis=f"Developments concerning '{term}' move the outcome",
                       effect=0.0, effect_sd=IGNORANCE_SD, weight=weight,
                       rationale="offline rule: direction unknown without a model; centred on no effect")
                for term in terms]
