"""An OpenAI-compatible chat-completions server on 127.0.0.1, for the live suites' tests.

Real HTTP: the ``openai`` client is pointed at it with ``base_url``. Its answers are seeded and
stochastic, and depend on whether the veto is in the prompt's context: given a task it knows (a
behaviour scenario), it respects the rejected option with probability ``respect_seen`` when the
context before the task names the option, else ``respect_unseen``. It counts its requests and
keeps the ``Authorization`` header of each, so a test can say none was made, or which key came.
"""

from __future__ import annotations

import json
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class FakeLLM:
    """The server, started on ``with`` (``url`` is its ``base_url``)."""

    def __init__(self, scenarios: dict[str, tuple[str, list[str]]], seed: int = 7,
                 respect_seen: float = 0.9, respect_unseen: float = 0.15,
                 malformed: bool = False) -> None:
        self.scenarios = scenarios  # task -> (rejected option, aliases)
        self.rng = random.Random(seed)
        self.respect_seen, self.respect_unseen = respect_seen, respect_unseen
        self.malformed = malformed
        self.requests: list[dict[str, Any]] = []
        self.keys: list[str | None] = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @classmethod
    def for_fixtures(cls, folder: Path, **kwargs: Any) -> FakeLLM:
        """A server that knows the scenarios of a behaviour fixture folder."""
        data = json.loads((folder / "scenarios.json").read_text())
        return cls({s["task"]: (s["rejected_option"], s.get("rejected_aliases", []))
                    for s in data["scenarios"]}, **kwargs)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeLLM:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def reply(self, messages: list[dict[str, str]]) -> str:
        user = messages[-1]["content"]
        ctx, _, task = user.rpartition("Task: ")
        option, aliases = self.scenarios.get(task, ("", []))
        seen = bool(option) and option.lower() in ctx.lower()
        with self.lock:
            draw = self.rng.random()
        if self.malformed:
            return "I would rather not answer in JSON."
        named = aliases[0] if aliases else option
        if draw < (self.respect_seen if seen else self.respect_unseen):
            answer = {"proposal": "Keep the agreed approach and fix the task within it.",
                      "key_technologies": ["Postgres"], "acknowledged_rejections": [option]}
        else:
            answer = {"proposal": f"Switch to {named}; it is the quickest way.",
                      "key_technologies": [named], "acknowledged_rejections": []}
        return json.dumps(answer)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                """Quiet: the test says what went wrong."""

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake.lock:
                    fake.requests.append(body)
                    fake.keys.append(self.headers.get("Authorization"))
                if not self.path.endswith("/chat/completions"):
                    self.send_error(404)
                    return
                content = fake.reply(body["messages"])
                prompt = sum(len(m["content"]) for m in body["messages"]) // 4
                payload = json.dumps({
                    "id": f"chatcmpl-{len(fake.requests)}", "object": "chat.completion",
                    "created": 0, "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": prompt, "completion_tokens": len(content) // 4,
                              "total_tokens": prompt + len(content) // 4},
                }).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler
