"""The redaction filter: configured keys' values and key shapes masked in messages, arguments and tracebacks."""

import io
import logging

from forum_atlas.redaction import MASK, RedactingFilter, RedactingStream, redact, remember_secret

KEY = "not-shaped-like-a-key-0123456789"


def test_configured_values_and_key_shapes_are_masked(monkeypatch):
    monkeypatch.setenv("VOYAGE_API_KEY", KEY)
    monkeypatch.setenv("ATLAS_LLM", "offline-engine-name")   # not a secret's name: left as is
    text = (f"voyage said {KEY}; openai: Incorrect API key provided: sk-proj-abcdefghijklmnop1234; "
            "header Authorization: Bearer eyJhbGciOi.J9x; postgresql://atlas:hunter22@db/forum; engine offline-engine-name")
    shown = redact(text)
    assert KEY not in shown and "sk-proj-abcdefghijklmnop1234" not in shown and "eyJhbGciOi" not in shown
    assert "hunter22" not in shown and "offline-engine-name" in shown and shown.count(MASK) == 4


def test_a_remembered_block_secret_is_masked():
    remember_secret("block-secret-value-42")
    assert redact("the block said block-secret-value-42") == f"the block said {MASK}"


def test_the_filter_masks_arguments_and_the_chained_traceback(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    written = io.StringIO()
    handler = logging.StreamHandler(written)
    handler.addFilter(RedactingFilter())
    logger = logging.getLogger("test.redaction")
    logger.addHandler(handler)
    try:
        try:
            try:
                raise ValueError(f"401: Incorrect API key provided: {KEY}")
            except ValueError as cause:
                raise RuntimeError("the engine failed") from cause
        except RuntimeError:
            logger.exception("call with key %s failed", KEY)
    finally:
        logger.removeHandler(handler)
    log = written.getvalue()
    assert KEY not in log and "Incorrect API key provided: [redacted]" in log and "call with key [redacted]" in log


def test_a_stream_masks_a_key_split_across_writes(monkeypatch):
    monkeypatch.setenv("COHERE_API_KEY", KEY)
    out = io.StringIO()
    stream = RedactingStream(out)
    stream.write(f"Traceback: {KEY[:10]}")
    stream.write(f"{KEY[10:]} end\nlast line {KEY}")
    stream.flush()
    assert KEY not in out.getvalue() and out.getvalue().count(MASK) == 2
