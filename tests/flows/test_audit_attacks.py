"""Issue 22: a hostile model against the audit, on the real database through the real OpenAI SDK.

Every attack class (tiny quotes, overreach, reversal, context cut, sub-word match, synthesis
laundering, crashes, display spoof) and every class caught before must end not [SOURCED]; the
controls (an exact quote, a whitespace-only difference, a light paraphrase read with its sentence)
must stay [SOURCED]. No attack may crash the deliberation."""

from __future__ import annotations

from dataclasses import replace

import pytest

from forum_atlas.cli.main import main
from forum_atlas.deliberation.model import INFERRED, SOURCED
from forum_atlas.deliberation.render import SELF_VERIFIED_STATEMENT, render_text
from forum_atlas.deliberation.verify import verify_brief
from forum_atlas.flows.deliberate import deliberation
from forum_atlas.store import briefs
from forum_atlas.tasks.deliberation import PLAIN_CALLS, DeliberationParameters
from tests.support.hostile_model import ATTACKS, CHAT, QUESTION, HostileModel, load_corpus, play

VERIFIER = "You check citations"


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
        assert verify_brief(briefs.stored_brief(db, o.brief_id)) == [], o.attack.name


def _verifier_calls(model: HostileModel) -> int:
    return sum(VERIFIER in r.body["messages"][0]["content"] for r in model.server.requests_to(CHAT))


def test_the_drafting_model_never_verifies_its_own_claims_by_default(hostile, db):
    model, settings = hostile
    model.attack = ATTACKS[0]  # the exact quote: a verifier that approves everything is asked about it
    params = DeliberationParameters(question=QUESTION, personas=["technical"], engine="openai")
    same = replace(settings, support_verifier="openai")
    view = deliberation(params, same, PLAIN_CALLS)
    assert _verifier_calls(model) == 0 and not view.audit.self_verified
    assert view.engines["support"].startswith("rule-based-support") and "drafted the claims" in view.engines["support"]

    other = deliberation(params, replace(same, support_model="another-model"), PLAIN_CALLS)
    assert _verifier_calls(model) == 1 and not other.audit.self_verified
    assert other.engines["support"].startswith("openai:another-model")

    allowed = deliberation(params, replace(same, allow_self_verification=True), PLAIN_CALLS)
    assert _verifier_calls(model) == 2 and allowed.audit.self_verified
    assert "checked them itself" in allowed.engines["support"]
    shown = render_text(briefs.load_brief(db, allowed.brief_id))
    assert SELF_VERIFIED_STATEMENT in shown
    snapshot = briefs.load_snapshot(db, allowed.brief_id)["evidence"]
    assert snapshot["audit"]["self_verified"] is True and "checked them itself" in snapshot["engines"]["support"]


def test_no_model_input_crashes_atlas_ask(prefect_env, hostile, db, database_url, tmp_path, monkeypatch, capsys):
    model, _ = hostile
    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path))
    model.attack = next(a for a in ATTACKS if a.name == "every crash input in one answer")
    assert main(["ask", QUESTION, "--engine", "openai", "--persona", "technical"]) == 0
    out = capsys.readouterr().out
    brief_id = int(out.split("Brief #", 1)[1].split(":", 1)[0])
    assert "downgraded: unsafe_text" in out and "\x00" not in out
    view = briefs.load_brief(db, brief_id)
    tags = [c.tag for c in view.sections[0].claims]
    assert tags == [SOURCED, INFERRED, INFERRED, INFERRED, INFERRED]
    assert main(["verify", str(brief_id)]) == 0
    assert "sealed under verbatim rule whole-words-v2, support rules grounding-v2" in capsys.readouterr().out
