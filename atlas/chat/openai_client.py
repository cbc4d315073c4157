"""The one place an OpenAI-compatible chat endpoint is called: client construction, the request's
settings, structured output, and the mapping of the SDK's exceptions to the typed provider errors (RET-6).

Every OpenAI-backed engine (driver decomposition, deliberation, support verification) holds an
`OpenAIChat` and calls `complete_json` (or `recorded`, which adds the call's `CallRecord`: input
digest, sha256 of the exact messages, outcome, latency, attempts); nothing else in the package builds
an `openai.OpenAI` for chat or catches an `openai` exception from one.

How a request is sent (`LLMOptions`, from ATLAS_LLM_* or the providers block):
- At most `concurrency` requests per endpoint are in flight from this process; the others wait here,
  not in the server's queue. `timeout_s` counts from the moment a request is sent.
- A request that times out is abandoned by the caller but keeps its endpoint slot until the server
  answers it (or for twice `timeout_s` more, when its connection is closed): a one-request-at-a-time
  server, which goes on working on a request whose client left, never gets a second request queued
  behind it. A timed-out request is not retried (it may still be running); a request the server
  refused or could not take (no connection, 429 with its Retry-After, 5xx) is retried up to
  `retries` times. The attempts made are counted here (the SDK's own retries are off).
- Structured output: given a JSON schema, the request asks for `response_format` json_schema; a
  server that rejects it (an error naming response_format or json_schema) is asked again with
  json_object plus the schema without its length bounds (llama.cpp's grammar form), then with plain
  json_object and the schema written into the prompt. The level an endpoint accepted is remembered for the process.
- A server that answered is mapped by its HTTP status (401/403 auth, 429 rate-limited with its
  Retry-After, 408/504 timeout, 5xx unavailable, other 4xx bad response); no answer at all is a
  timeout or an unreachable server; a reply the SDK cannot read is a bad response.
- The API key is given to the SDK only: it is never part of a message, a digest, a log line or an
  error's detail (a server that echoes it back in an error message has it masked).
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import openai

from forum_atlas.calls import CallRecord, digest_of
from forum_atlas.config import LLMOptions
from forum_atlas.providers import (
    ProviderAuthError,
    ProviderError,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderUnavailable,
    error_for_exception,
    retry_call,
)

DEFAULT_MODEL = "gpt-4o-mini"
KEY_ENV = "OPENAI_API_KEY"
DRAIN_FACTOR = 2.0   # an abandoned request keeps its slot for up to this many timeouts more
RETRY_BASE_DELAY_S = 0.5
RETRY_MAX_DELAY_S = 60.0

# How structured output is asked for, best first; an endpoint that rejects one is asked with the next.
JSON_SCHEMA, JSON_OBJECT_SCHEMA, JSON_OBJECT = "json_schema", "json_object+schema", "json_object"
FORMAT_LEVELS = (JSON_SCHEMA, JSON_OBJECT_SCHEMA, JSON_OBJECT)
_REJECTION_STATUSES = frozenset({400, 422, 500})   # llama-cpp-python answers 500 for a format it does not know
_format_level: dict[tuple[str, str], str] = {}     # (endpoint, model) -> the level it accepted
_gates: dict[str, threading.BoundedSemaphore] = {}
_registry_lock = threading.Lock()


@dataclass(frozen=True)
class ChatResult:
    content: str | None       # the first choice's message content (None when the model sent none)
    finish_reason: str | None
    attempts: int             # requests made, retries and format fallbacks included
    latency_ms: float
    prompt_hash: str = ""     # sha256 of the exact messages sent (the schema is in them at the json_object level)
    response_format: str = JSON_OBJECT   # the structured-output level the answer was produced under


def typed_openai_error(provider: str, exc: BaseException, *, secret: str | None = None,
                       attempts: int = 1) -> ProviderError:
    """The typed provider error for an exception raised by the `openai` SDK (or while reading its
    reply). `secret` (the API key) is masked out of the detail if the server echoed it."""
    if isinstance(exc, openai.APIStatusError):
        error = error_for_exception(provider, exc, status=exc.status_code, headers=exc.response.headers,
                                    timeouts=(), connection_errors=(), attempts=attempts)
    elif isinstance(exc, openai.APIConnectionError):  # APITimeoutError is a subclass
        error = error_for_exception(provider, exc, status=None, headers=None, timeouts=(openai.APITimeoutError,),
                                    connection_errors=(openai.APIConnectionError,), attempts=attempts)
    else:  # APIResponseValidationError, an unreadable body, anything else the SDK raised
        error = error_for_exception(provider, exc, status=None, headers=None, timeouts=(), connection_errors=(),
                                    attempts=attempts)
    if secret and secret in error.detail:
        error.detail = error.detail.replace(secret, "***")
        error.args = (f"{provider}: {error.kind}: {error.detail}",)
    return error


def rejects_format(exc: BaseException) -> bool:
    """The server refused the request because of its `response_format` (it does not know the type,
    or not the schema in it)."""
    if not isinstance(exc, openai.APIStatusError) or exc.status_code not in _REJECTION_STATUSES:
        return False
    try:
        said = f"{exc.message} {exc.response.text}"
    except Exception:  # noqa: BLE001 - an unreadable error body says nothing about the format
        said = str(exc.message)
    said = said.lower()
    return "response_format" in said or "json_schema" in said


def endpoint_gate(endpoint: str, concurrency: int) -> threading.BoundedSemaphore:
    """The process's slots for one endpoint (the first caller's `concurrency` sets their number)."""
    with _registry_lock:
        gate = _gates.get(endpoint)
        if gate is None:
            gate = _gates[endpoint] = threading.BoundedSemaphore(concurrency)
        return gate


_LENGTH_BOUNDS = frozenset({"maxLength", "minLength", "maxItems", "minItems"})


def without_length_bounds(schema: Any) -> Any:
    """`schema` without length bounds, for llama.cpp's grammar form: converters of older servers unroll a
    bound into nested optional groups too deep for their grammar parser, which then falls back, silently,
    to plain JSON (enums lost with it). The answer's reader enforces the bounds instead."""
    if isinstance(schema, dict):
        return {k: without_length_bounds(v) for k, v in schema.items() if k not in _LENGTH_BOUNDS}
    if isinstance(schema, list):
        return [without_length_bounds(v) for v in schema]
    return schema


def forget_endpoints() -> None:
    """Forget every endpoint's structured-output level and slots (a test's server is gone when it ends,
    and a later one may get its port)."""
    with _registry_lock:
        _format_level.clear()
        _gates.clear()


def schema_instruction(schema: dict[str, Any]) -> str:
    return "The JSON object must follow this JSON Schema:\n" + json.dumps(schema, ensure_ascii=False,
                                                                           separators=(",", ":"))


class OpenAIChat:
    """An OpenAI-compatible chat endpoint answering JSON. `provider` names the caller in typed errors."""

    def __init__(self, *, provider: str, model: str = DEFAULT_MODEL, api_key: str | None = None,
                 base_url: str | None = None, options: LLMOptions | None = None):
        key = api_key or os.environ.get(KEY_ENV)
        if not key:
            raise ProviderAuthError(provider, f"no API key: pass api_key or set {KEY_ENV}")
        self.provider = provider
        self.model = model
        self.options = options or LLMOptions()
        self._secret = key
        # the SDK's read timeout is the drain limit; the caller stops waiting at `timeout_s` (_send)
        self._client = openai.OpenAI(api_key=key, base_url=base_url, max_retries=0,
                                     timeout=self.options.timeout_s * (1 + DRAIN_FACTOR))
        self.endpoint = str(self._client.base_url).rstrip("/")

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIChat(provider={self.provider!r}, model={self.model!r}, base_url={self.endpoint!r})"

    def typed(self, exc: BaseException, attempts: int = 1) -> ProviderError:
        return typed_openai_error(self.provider, exc, secret=self._secret, attempts=attempts)

    def format_level(self) -> str:
        return _format_level.get((self.endpoint, self.model), JSON_SCHEMA)

    def complete_json(self, messages: list[dict[str, Any]], *, schema: dict[str, Any] | None = None,
                      schema_name: str = "answer") -> ChatResult:
        """One chat completion answering a JSON object (`schema`: what the object must look like).
        Raises a typed `ProviderError` for anything the provider did wrong, with `prompt_hash` and
        `attempts` set; the content is not parsed here."""
        start = time.perf_counter()
        attempts = 0
        level = self.format_level() if schema is not None else JSON_OBJECT
        while True:
            sent = self._messages(messages, schema, level)
            prompt_hash = digest_of(sent)

            def once() -> Any:
                nonlocal attempts
                attempts += 1
                return self._send(sent, self._response_format(schema, schema_name, level), attempts)

            try:
                completion = retry_call(once, retry_on=(ProviderRateLimited, ProviderUnavailable),
                                        attempts=self.options.retries + 1, base_delay=RETRY_BASE_DELAY_S,
                                        max_delay=RETRY_MAX_DELAY_S)
            except _FormatRejected as rejected:
                lower = FORMAT_LEVELS[FORMAT_LEVELS.index(level) + 1:]
                if not lower:
                    raise self._typed(rejected.cause, attempts, prompt_hash) from rejected.cause
                level = lower[0]
                with _registry_lock:
                    _format_level[(self.endpoint, self.model)] = level
                continue
            except ProviderError as exc:
                exc.attempts, exc.prompt_hash = attempts, prompt_hash  # type: ignore[attr-defined]
                raise
            try:
                choice = completion.choices[0] if completion.choices else None
                content = choice.message.content if choice is not None and choice.message is not None else None
                finish = choice.finish_reason if choice is not None else None
            except (AttributeError, TypeError, ValueError) as exc:
                raise self._typed(exc, attempts, prompt_hash) from exc
            return ChatResult(content=content, finish_reason=finish, attempts=attempts,
                              latency_ms=(time.perf_counter() - start) * 1000.0, prompt_hash=prompt_hash,
                              response_format=level)

    def _typed(self, exc: BaseException, attempts: int, prompt_hash: str) -> ProviderError:
        error = self.typed(exc, attempts)
        error.prompt_hash = prompt_hash  # type: ignore[attr-defined]
        return error

    @staticmethod
    def _messages(messages: list[dict[str, Any]], schema: dict[str, Any] | None, level: str) -> list[dict[str, Any]]:
        if schema is None or level != JSON_OBJECT:
            return messages
        # the server enforces JSON only: the schema goes into the (first) system message
        out = [dict(m) for m in messages]
        system = next((m for m in out if m.get("role") == "system"), None)
        if system is None:
            return [{"role": "system", "content": schema_instruction(schema)}, *out]
        system["content"] = f"{system['content']}\n\n{schema_instruction(schema)}"
        return out

    @staticmethod
    def _response_format(schema: dict[str, Any] | None, name: str, level: str) -> dict[str, Any]:
        if schema is None or level == JSON_OBJECT:
            return {"type": "json_object"}
        if level == JSON_OBJECT_SCHEMA:
            return {"type": "json_object", "schema": without_length_bounds(schema)}
        # strict=False: OpenAI's strict mode refuses maxLength; servers with a grammar enforce it anyway
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}

    def _send(self, messages: list[dict[str, Any]], response_format: dict[str, Any], attempt: int) -> Any:
        """One request, in a slot of the endpoint's gate. Raises `_FormatRejected` when the server
        refused the response_format, else a typed error."""
        gate = endpoint_gate(self.endpoint, self.options.concurrency)
        gate.acquire()
        done = threading.Event()
        box: dict[str, Any] = {}

        def request() -> None:
            try:
                raw = self._client.chat.completions.with_raw_response.create(
                    model=self.model, temperature=self.options.temperature, max_tokens=self.options.max_tokens,
                    response_format=response_format, messages=messages,  # type: ignore[arg-type]
                )
                box["completion"] = raw.parse()
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread, whatever it was
                box["error"] = exc
            finally:
                gate.release()
                done.set()

        threading.Thread(target=request, name=f"llm-request:{self.endpoint}", daemon=True).start()
        if not done.wait(self.options.timeout_s):
            raise ProviderTimeout(self.provider, f"no answer within {self.options.timeout_s:g} s (ATLAS_LLM_TIMEOUT_S); "
                                  "the request keeps its slot until the server answers it", attempts=attempt)
        if "error" in box:
            exc = box["error"]
            if rejects_format(exc):
                raise _FormatRejected(exc)
            if not isinstance(exc, Exception):
                raise exc
            # an SDK error, or a reply it could not read (one nested too deeply included): typed, not a crash
            raise self.typed(exc, attempt) from exc
        return box["completion"]

    def recorded(self, messages: list[dict[str, Any]], *, stage: str, provider: str, version: str,
                 input_digest: str, schema: dict[str, Any] | None = None) -> tuple[ChatResult, CallRecord]:
        """`complete_json` with its audit record (AUD-4): the input digest, the sha256 of the exact
        messages sent, outcome, latency and attempts. On a provider failure the typed error is raised
        with the record of the failed call attached as `error.call`."""
        record = CallRecord(stage=stage, provider=provider, version=version, input_digest=input_digest,
                            prompt_hash=digest_of(messages))
        start = time.perf_counter()
        try:
            result = self.complete_json(messages, schema=schema)
        except ProviderError as exc:
            record.outcome, record.detail, record.attempts = exc.kind, exc.detail[:500], exc.attempts
            record.prompt_hash = getattr(exc, "prompt_hash", None) or record.prompt_hash
            record.latency_ms = (time.perf_counter() - start) * 1000.0
            exc.call = record  # type: ignore[attr-defined]
            raise
        record.latency_ms, record.attempts, record.prompt_hash = result.latency_ms, result.attempts, result.prompt_hash
        return result, record


class _FormatRejected(Exception):
    """The server refused the request's response_format (not a provider failure: ask again lower)."""

    def __init__(self, cause: BaseException):
        super().__init__(str(cause))
        self.cause = cause
