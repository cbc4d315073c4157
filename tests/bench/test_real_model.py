"""bench.real_model against a scripted OpenAI-compatible server (the real-model run itself is opt-in)."""

from __future__ import annotations

import json
import re

from bench.real_model import main
from tests.support.wire import Received, Reply, WireServer

PATH = "/v1/chat/completions"


def half_valid(received: Received) -> Reply:
    """One claim quoting the first sentence shown of S1 verbatim, one citing a passage that was not given."""
    user = received.body["messages"][1]["content"]
    shown = user.split("[S1] ", 1)[1].split("\n", 1)[1]
    sentence = re.match(r"(?:\[…\] )?(.+?\.)(?: |$)", shown).group(1)
    answer = {"claims": [{"text": sentence, "tag": "SOURCED", "source": "S1", "quote": sentence},
                         {"text": "Something else.", "tag": "SOURCED", "source": "S99", "quote": "x"}],
              "insufficient_evidence": None}
    return Reply(200, {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": json.dumps(answer)}}]})


def test_the_bench_reads_answers_claim_by_claim_and_audits_them(shared_data, capsys):
    with WireServer() as srv:
        srv.always(PATH, half_valid)
        assert main(["--base-url", srv.url + "/v1", "--model", "scripted", "--claims", "3",
                     "--data", str(shared_data / "scifact"), "--json"]) == 0
        assert len(srv.requests_to(PATH)) == 3
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| openai:scripted"))
    # 3 asks, all read (none under the old all-or-nothing rule), 6 claims kept; 2 SOURCED written and kept by
    # the audit (claim 5's first sentence is 432 characters: over the quote cap, that claim is kept as INFERRED)
    assert [c.strip() for c in row.split("|")[2:8]] == ["3", "3/3", "0/3", "6", "2", "2"]
    asks = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert [a["outcome"] for a in asks] == ["degraded"] * 3 and all("S99" in a["detail"] for a in asks)
    assert "offline (reference)" in out
