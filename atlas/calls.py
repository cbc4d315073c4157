"""What a provider or model call leaves behind (AUD-4), shared by the deliberation and the engines that
answer it (forum_atlas.llm, forum_atlas.entailment): the call's record, the digest of what it was asked,
and the verifier's verdicts (DEL-8)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, is_dataclass
from typing import Any, Literal

# supports / contradicts / contextual, or abstain when the verifier cannot tell (DEL-8).
Verdict = Literal["supports", "contradicts", "contextual", "abstain"]
VERDICTS: tuple[Verdict, ...] = ("supports", "contradicts", "contextual", "abstain")


def call_json(value: Any) -> str:
    """The text a call's input digest and prompt hash are taken of: sorted keys, no spaces, UTF-8
    kept, dataclasses as dicts."""
    if is_dataclass(value) and not isinstance(value, type):
        value = asdict(value)
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def digest_of(value: Any) -> str:
    """sha256 hex of `call_json(value)`: what a provider was asked, for the call log (AUD-4)."""
    return hashlib.sha256(call_json(value).encode("utf-8")).hexdigest()


@dataclass
class CallRecord:
    """One provider or model call (AUD-4): what was asked (as a digest), how it went, how long."""
    stage: str                        # e.g. "draft:technical#1", "support", "synthesis"
    provider: str                     # engine name
    version: str
    input_digest: str                 # sha256 hex of the canonical request
    outcome: str = "ok"               # ok | timeout | rate_limited | auth | unavailable | bad_response
    latency_ms: float = 0.0
    attempts: int = 1
    detail: str = ""
    prompt_hash: str | None = None    # sha256 hex of the exact prompt sent (model engines)
    flow_run_id: str | None = None
    task_run_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
