"""The deliberation engine interface (DEL-2, DEL-6): what drafts a persona's claims and the synthesis.
Its implementations, picked by name, are forum_atlas.llm's (`make_deliberation_engine`)."""

from __future__ import annotations

from typing import Protocol

from forum_atlas.deliberation.model import DraftReply, DraftRequest, SynthesisRequest


class DeliberationEngine(Protocol):
    name: str
    version: str
    extractive: bool    # True: claims are copied from passages, not written by a model (said in the brief)

    def draft(self, request: DraftRequest) -> DraftReply: ...

    def synthesize(self, request: SynthesisRequest) -> DraftReply: ...
