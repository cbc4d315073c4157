"""Issue 22: a hostile model against the audit, on the real database through the real OpenAI SDK.

Every attack class (tiny quotes, overreach, reversal, context cut, sub-word match, synthesis
laundering, crashes, display spoof) and every class caught before must end not [SOURCED]; the
controls (an exact quote, a whitespace-only difference, a light paraphrase read with its sentence)
must stay [SOURCED]. No attack may crash the deliberation."""

from __future__ import annotations

from dataclasses import replace

import pytest

from forum_atlas.store import briefs
from tests.support.hostile_model import ATTACKS, HostileModel, load_corpus, play


@pytest.fixture
def hostile(monkeypatch, settings, db):
    load_corpus(db)
    with HostileModel() as model:
        monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")
        yield model, replace(settings, llm="openai")


def test_every_attack_is_downgraded_or_refused_and_the_controls_pass(hostile, db):
    model, settings = hostile
    outcomes = [play(model, attack, settings) for attack in ATTACKS]
    for o in outcomes:
        print(f"{o.attack.kind:22s} {o.attack.name:60s} {o.observed:9s} {o.reason[:100]}")
    assert [o for o in outcomes if o.observed == "crash"] == []
    assert [(o.attack.name, o.observed, o.reason) for o in outcomes if not o.held] == []
    # every brief that was written verifies under the rule that sealed it
    for o in outcomes:
        assert briefs.verify_brief(db, o.brief_id) == [], o.attack.name
