"""The LLM a live suite asks (docs/live.md): an OpenAI-compatible chat-completions endpoint
behind a record/replay cache and a budget.

Every call is keyed by sha256 of the canonical JSON of (model, messages, parameters, repeat
index). ``replay`` answers only from the cache (a miss is an ERROR naming the item); ``record``
calls and records; ``auto`` answers from the cache and calls on a miss. Without a key (the
variable ``[live] api_key_env`` names is unset or empty) a miss in ``auto`` skips the suite
(:class:`LiveSkipped`): the runner leaves its cells out and says so, so the gate compares their
absence, never a silent pass. The key is read here, by the gate only; the adapter's environment
does not hold it unless ``[adapter] pass_env`` names it.

The cache is a JSONL file, one entry per line in key order, rewritten atomically after every
answer bought: a run stopped half-way keeps what it paid for, and a run recorded twice writes the
same bytes. The ``openai`` client is imported only when a call has to be made.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from membench_gate.errors import GateError
from membench_gate.files import read_text, write_atomic
from membench_gate.model.canonical import canonical_dumps

if TYPE_CHECKING:
    from membench_gate.config import LiveTable

INSTALL = 'pip install "membench-gate[live]"'
CACHE_VERSION = 1


class LiveSkipped(Exception):  # a skip, not an error: the runner reports it
    """A live suite that cannot be answered here: no key, and an answer not in the cache."""


class LLM:
    """The chat-completions client of one run: cache first, the endpoint on a miss, counted."""

    def __init__(self, table: LiveTable, base_dir: Path, completion_tokens: int,
                 env: Mapping[str, str] | None = None) -> None:
        self.table = table
        self.completion_tokens = completion_tokens
        self.key = (os.environ if env is None else env).get(table.api_key_env) or None
        self.cache_path = base_dir / table.cache if table.cache else None
        self.cache_label = table.cache or ""
        self.entries = self._load()
        self.calls = self.cached = self.prompt_tokens = self.completion_tokens_used = 0
        self.skipped: dict[str, str] = {}
        self._client: Any = None

    # -- before the first call -------------------------------------------------------------------

    def preflight(self, planned: dict[str, tuple[int, int]]) -> None:
        """Refuse the run before any call when its planned calls or tokens (suite -> (calls,
        estimated tokens), every repeat counted) exceed the budget, or when it must call and the
        client is not installed."""
        calls = sum(c for c, _ in planned.values())
        tokens = sum(t for _, t in planned.values())
        where = ", ".join(f"{name}: {c}" for name, (c, _) in sorted(planned.items()))
        # The budget bounds what the endpoint is asked. In replay, or without a key (auto: a
        # miss is skipped), nothing can be: a recorded run replays whatever it cost to record.
        calls_possible = self.table.mode == "record" or (
            self.table.mode == "auto" and self.key is not None)
        if not calls_possible:
            calls = tokens = 0
        if calls > self.table.max_calls:
            raise GateError(f"[live] max_calls = {self.table.max_calls}: the run needs {calls} LLM "
                            f"calls ({where}; scenarios x conditions x repeats) — nothing was "
                            "called")
        if tokens > self.table.max_tokens:
            raise GateError(f"[live] max_tokens = {self.table.max_tokens}: the run's {calls} LLM "
                            f"calls are estimated at {tokens} tokens — nothing was called")
        if self.table.mode == "record" and self.key is None:
            raise GateError(f"[live] mode = 'record' needs the key in ${self.table.api_key_env}, "
                            "which is not set")
        if self.table.mode == "replay" and self.cache_path is None:
            raise GateError("[live] mode = 'replay' needs [live] cache (the recorded answers)")
        if self.table.mode != "replay" and self.key is not None \
                and importlib.util.find_spec("openai") is None:
            raise GateError(f"[live]: the LLM client is not installed: {INSTALL}")

    # -- one call --------------------------------------------------------------------------------

    def parameters(self) -> dict[str, Any]:
        return {"temperature": self.table.temperature, "max_tokens": self.completion_tokens}

    def key_of(self, messages: list[dict[str, str]], repeat: int) -> str:
        payload = {"model": self.table.model, "messages": messages,
                   "parameters": self.parameters(), "repeat": repeat}
        return hashlib.sha256(canonical_dumps(payload).encode()).hexdigest()

    def complete(self, messages: list[dict[str, str]], item: str, repeat: int) -> str:
        """The reply to ``messages`` for ``item`` (pass ``repeat`` of its suite)."""
        key = self.key_of(messages, repeat)
        entry = self.entries.get(key)
        if entry is not None and self.table.mode != "record":
            self.cached += 1
            return str(entry["reply"])
        if self.table.mode == "replay":
            raise GateError(f"{self.cache_label}: no recorded answer for {item} (repeat {repeat}; "
                            "[live] mode = 'replay': record it with mode = 'auto' or 'record')")
        if self.key is None:
            raise LiveSkipped(f"no key in ${self.table.api_key_env} and no recorded answer for "
                              f"{item}")
        self._spend(messages, item)
        reply, usage = self._call(messages, item)
        self.calls += 1
        self.prompt_tokens += usage[0]
        self.completion_tokens_used += usage[1]
        self.entries[key] = {"key": key, "item": item, "model": self.table.model,
                             "repeat": repeat, "reply": reply}
        self._save()
        return reply

    def _spend(self, messages: list[dict[str, str]], item: str) -> None:
        """Refuse a call the budget does not cover, before it is made (a suite that makes more
        calls than it planned, or replies longer than estimated, stops here)."""
        if self.calls + 1 > self.table.max_calls:
            raise GateError(f"[live] max_calls = {self.table.max_calls} reached before {item}")
        used = self.prompt_tokens + self.completion_tokens_used
        if used + estimate(messages) + self.completion_tokens > self.table.max_tokens:
            raise GateError(f"[live] max_tokens = {self.table.max_tokens}: {used} tokens used, "
                            f"the call for {item} could exceed it")

    def _call(self, messages: list[dict[str, str]], item: str) -> tuple[str, tuple[int, int]]:
        if self._client is None:
            try:
                import openai
            except ImportError as exc:
                raise GateError(f"[live]: the LLM client is not installed: {INSTALL}") from exc
            # No retries: a retried call is money the budget did not see.
            self._client = openai.OpenAI(base_url=self.table.base_url, api_key=self.key,
                                         max_retries=0, timeout=120.0)
        import openai

        try:
            response = self._client.chat.completions.create(
                model=self.table.model, messages=messages, **self.parameters())
        except openai.OpenAIError as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise GateError(f"[live] {self.table.base_url}: the call for {item} failed: "
                            f"{first}") from exc
        choices = getattr(response, "choices", None) or []
        content = choices[0].message.content if choices else None
        if not isinstance(content, str):
            raise GateError(f"[live] {self.table.base_url}: the answer for {item} has no message "
                            "content")
        usage = getattr(response, "usage", None)
        prompt = getattr(usage, "prompt_tokens", None) or estimate(messages)
        completion = getattr(usage, "completion_tokens", None) or len(content) // 4 + 1
        return content, (int(prompt), int(completion))

    # -- the cache -------------------------------------------------------------------------------

    def _load(self) -> dict[str, dict[str, Any]]:
        if self.cache_path is None or not self.cache_path.exists():
            return {}
        entries: dict[str, dict[str, Any]] = {}
        text = read_text(self.cache_path, self.cache_label, "LLM cache")
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                entry = None
            if not (isinstance(entry, dict) and isinstance(entry.get("key"), str)
                    and isinstance(entry.get("reply"), str)):
                raise GateError(f"{self.cache_label}: line {number}: not a cache entry "
                                "({\"key\": str, \"reply\": str, ...})")
            entries[entry["key"]] = entry
        return entries

    def _save(self) -> None:
        if self.cache_path is None:
            return
        lines = [json.dumps({"v": CACHE_VERSION, **self.entries[key]}, ensure_ascii=False,
                            sort_keys=True) for key in sorted(self.entries)]
        write_atomic(self.cache_path, "".join(f"{line}\n" for line in lines))

    def receipt(self) -> dict[str, Any]:
        """What the run cost, for the receipt (never part of the measurement)."""
        return {"calls": self.calls, "cached": self.cached, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens_used,
                "skipped": dict(sorted(self.skipped.items()))}


def estimate(messages: list[dict[str, str]]) -> int:
    """Tokens of a prompt, estimated before sending (about four characters a token)."""
    return sum(len(m["content"]) for m in messages) // 4 + 1


class LiveSession:
    """A suite's session with ``complete`` added: the adapter's methods pass through, and
    ``repeat`` is the one of the session it wraps (whoever sets it)."""

    def __init__(self, inner: Any, llm: LLM) -> None:
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_llm", llm)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._inner, name, value)

    @property
    def repeat(self) -> int:
        return int(getattr(self._inner, "repeat", 0))

    def complete(self, messages: list[dict[str, str]], item: str, repeat: int) -> str:
        return self._llm.complete(messages, item, repeat)
