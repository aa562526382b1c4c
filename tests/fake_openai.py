"""A fake OpenAI-compatible Chat Completions server on 127.0.0.1, for end-to-end tests through the
real ``openai`` SDK (the counterpart of tests/fake_anthropic.py).

Stdlib only. ``POST /v1/chat/completions`` answers a ``chat.completion`` object, or with
``"stream": true`` an SSE stream of ``chat.completion.chunk`` objects: a role chunk, content deltas,
a chunk with the finish reason, with ``stream_options.include_usage`` a final usage chunk with empty
choices (unless ``stream_usage`` is off, like servers that do not support it), then ``data: [DONE]``.

Tokens are estimated like the Anthropic fake (1 per CJK character, 1 per 4 other characters).
Automatic prefix caching is emulated: a system message seen before in the server's lifetime is
reported as ``prompt_tokens_details.cached_tokens`` (and, with ``deepseek_usage``, DeepSeek's
``prompt_cache_hit_tokens`` / ``prompt_cache_miss_tokens`` instead).

Faults are queued with ``add_fault`` and consumed one per request: an HTTP error (with
``Retry-After``), a delay before answering, a stall mid-stream, a cut stream (connection dropped
or body ended early), an error object inside the stream, a dropped connection.
"""
from __future__ import annotations

import itertools
import json
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from tests.fake_anthropic import DEFAULT_REPLY, estimate_tokens

Reply = str | Callable[[dict[str, Any]], str]
FaultKind = Literal["http", "delay", "stall", "disconnect", "truncate", "stream_error"]


@dataclass(frozen=True)
class Fault:
    """``http``: answer ``status`` (with ``Retry-After: retry_after`` when set). ``delay``: sleep
    ``seconds`` before answering. ``stall``: stream ``after_deltas`` deltas, then sleep ``seconds``
    before going on. ``truncate``: stream ``after_deltas`` deltas, then stop (``abrupt`` drops the
    connection mid-body, else the body ends cleanly without a finish reason or [DONE]).
    ``stream_error``: an error object after ``after_deltas`` deltas. ``disconnect``: no response."""

    kind: FaultKind
    status: int = 0
    seconds: float = 0.0
    after_deltas: int = 2
    abrupt: bool = True
    retry_after: str | None = None


def http_fault(status: int, retry_after: str | None = None) -> Fault:
    return Fault("http", status=status, retry_after=retry_after)


RATE_LIMITED = http_fault(429, retry_after="0.01")
SERVER_ERROR = http_fault(500)
UNAVAILABLE = http_fault(503)
BAD_REQUEST = http_fault(400)
UNAUTHORIZED = http_fault(401)
NOT_FOUND = http_fault(404)
DISCONNECT = Fault("disconnect")

ERROR_TYPES = {400: "invalid_request_error", 401: "invalid_api_key", 404: "model_not_found",
               429: "rate_limit_exceeded", 500: "server_error", 503: "service_unavailable"}


def delay(seconds: float) -> Fault:
    return Fault("delay", seconds=seconds)


def stall(seconds: float, after_deltas: int = 2) -> Fault:
    return Fault("stall", seconds=seconds, after_deltas=after_deltas)


def truncated_stream(after_deltas: int = 2, *, abrupt: bool = True) -> Fault:
    return Fault("truncate", after_deltas=after_deltas, abrupt=abrupt)


def stream_error(after_deltas: int = 2) -> Fault:
    return Fault("stream_error", after_deltas=after_deltas)


def error_body(status: int) -> dict[str, Any]:
    kind = ERROR_TYPES.get(status, "server_error")
    return {"error": {"message": f"fake error {status}: {kind}", "type": kind, "param": None, "code": kind}}


def prompt_tokens(body: dict[str, Any]) -> int:
    return sum(estimate_tokens(str(message.get("content") or "")) + 4 for message in body.get("messages", []))


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class FakeOpenAI:
    """The fake server. Knobs may be changed between requests."""

    reply: Reply = DEFAULT_REPLY
    chunk_chars: int = 4
    stream_usage: bool = True  # honour stream_options.include_usage
    deepseek_usage: bool = False  # report cache hits DeepSeek's way
    finish_reason: str | None = None  # force one (e.g. "content_filter"); else stop / length
    requests: list[RecordedRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._faults: deque[Fault] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._seen_prefixes: set[str] = set()
        self._connections: set[socket.socket] = set()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def add_fault(self, *faults: Fault) -> None:
        with self._lock:
            self._faults.extend(faults)

    def fail_next(self, count: int, fault: Fault = SERVER_ERROR) -> None:
        self.add_fault(*([fault] * count))

    def next_fault(self) -> Fault | None:
        with self._lock:
            return self._faults.popleft() if self._faults else None

    def next_id(self) -> int:
        with self._lock:
            return next(self._ids)

    def reply_for(self, body: dict[str, Any]) -> str:
        return self.reply(body) if callable(self.reply) else self.reply

    def cached_tokens(self, body: dict[str, Any]) -> int:
        """The system message is the cacheable prefix: a second sight of it is a cache hit."""
        messages = body.get("messages") or []
        if not messages or messages[0].get("role") != "system":
            return 0
        text = str(messages[0].get("content") or "")
        with self._lock:
            hit = text in self._seen_prefixes
            self._seen_prefixes.add(text)
        return estimate_tokens(text) + 4 if hit else 0

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [request for request in self.requests if request.path.endswith("/chat/completions")]

    @property
    def base_url(self) -> str:
        assert self._server is not None, "the fake is not running"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeOpenAI:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        server.block_on_close = False
        server.fake = self  # type: ignore[attr-defined]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._stopping.set()
        self._server.shutdown()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def track(self, connection: socket.socket, *, open_: bool) -> None:
        with self._lock:
            (self._connections.add if open_ else self._connections.discard)(connection)

    def sleep(self, seconds: float) -> None:
        self._stopping.wait(seconds)


def _fit(text: str, max_tokens: int) -> tuple[str, str]:
    if max_tokens <= 0 or estimate_tokens(text) <= max_tokens:
        return text, "stop"
    while text and estimate_tokens(text) > max_tokens:
        text = text[:-1]
    return text, "length"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30
    server: ThreadingHTTPServer

    @property
    def fake(self) -> FakeOpenAI:
        return self.server.fake  # type: ignore[attr-defined,no-any-return]

    def setup(self) -> None:
        super().setup()
        self.fake.track(self.connection, open_=True)

    def finish(self) -> None:
        self.fake.track(self.connection, open_=False)
        try:
            super().finish()
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's signature
        pass

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}") if length else {}
        recorded = RecordedRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        with self.fake._lock:
            self.fake.requests.append(recorded)
        request_id = f"req_fake_{self.fake.next_id():06d}"
        try:
            self._route(recorded, request_id)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True

    def _route(self, recorded: RecordedRequest, request_id: str) -> None:
        fault = self.fake.next_fault()
        if fault is not None and fault.kind == "delay":
            self.fake.sleep(fault.seconds)
            fault = None
        if fault is not None and fault.kind == "disconnect":
            self.close_connection = True
            return
        if fault is not None and fault.kind == "http":
            headers = {"retry-after": fault.retry_after} if fault.retry_after is not None else {}
            self._send_json(fault.status, error_body(fault.status), request_id, headers)
            return
        if not recorded.headers.get("authorization", "").startswith("Bearer "):
            self._send_json(401, error_body(401), request_id)
            return
        if not recorded.path.endswith("/chat/completions"):
            self._send_json(404, error_body(404), request_id)
            return
        body = recorded.body
        text, finish = _fit(self.fake.reply_for(body), int(body.get("max_tokens") or 0))
        finish = self.fake.finish_reason or finish
        usage = self._usage(body, text)
        completion_id = f"chatcmpl-fake{self.fake.next_id():06d}"
        if body.get("stream"):
            self._stream(completion_id, str(body.get("model", "")), text, finish, usage, request_id, fault,
                         include_usage=bool((body.get("stream_options") or {}).get("include_usage")))
        else:
            self._send_json(200, {
                "id": completion_id, "object": "chat.completion", "created": 1_700_000_000,
                "model": body.get("model", ""),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": finish, "logprobs": None}],
                "usage": usage}, request_id)

    def _usage(self, body: dict[str, Any], text: str) -> dict[str, Any]:
        prompt = prompt_tokens(body)
        cached = min(self.fake.cached_tokens(body), prompt)
        usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": estimate_tokens(text),
                                 "total_tokens": prompt + estimate_tokens(text)}
        if self.fake.deepseek_usage:
            usage.update(prompt_cache_hit_tokens=cached, prompt_cache_miss_tokens=prompt - cached)
        else:
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        return usage

    def _send_json(self, status: int, payload: dict[str, Any], request_id: str,
                   extra_headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("x-request-id", request_id)
        for name, value in (extra_headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, completion_id: str, model: str, text: str, finish: str, usage: dict[str, Any],
                request_id: str, fault: Fault | None, *, include_usage: bool) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("x-request-id", request_id)
        self.end_headers()
        events = self._events(completion_id, model, text, finish, usage, fault,
                              include_usage=include_usage and self.fake.stream_usage)
        for event in events:
            if event is None:  # a cut
                if not (fault and fault.abrupt):
                    self.wfile.write(b"0\r\n\r\n")
                self.close_connection = True
                return
            if isinstance(event, float):
                self.fake.sleep(event)
                continue
            self._chunk(event)
        self.wfile.write(b"0\r\n\r\n")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _events(self, completion_id: str, model: str, text: str, finish: str, usage: dict[str, Any],
                fault: Fault | None, *, include_usage: bool) -> Iterator[bytes | float | None]:
        """The SSE lines of one streamed reply; None marks a cut, a float a pause in seconds."""

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
            payload: dict[str, Any] = {
                "id": completion_id, "object": "chat.completion.chunk", "created": 1_700_000_000, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}]}
            if include_usage:
                payload["usage"] = None
            return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()

        yield chunk({"role": "assistant", "content": ""})
        pieces = [text[i:i + self.fake.chunk_chars] for i in range(0, len(text), self.fake.chunk_chars)]
        for count, piece in enumerate(pieces, start=1):
            yield chunk({"content": piece})
            if fault is not None and count == fault.after_deltas:
                if fault.kind == "stall":
                    yield fault.seconds
                elif fault.kind == "truncate":
                    yield None
                    return
                elif fault.kind == "stream_error":
                    yield f"data: {json.dumps(error_body(500))}\n\n".encode()
                    return
        yield chunk({}, finish)
        if include_usage:
            payload = {"id": completion_id, "object": "chat.completion.chunk", "created": 1_700_000_000,
                       "model": model, "choices": [], "usage": usage}
            yield f"data: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()
        yield b"data: [DONE]\n\n"
