"""A fake Anthropic Messages API on 127.0.0.1, for end-to-end tests through the real SDK.

Stdlib only: a ``ThreadingHTTPServer`` in a background thread, started on a random free loopback
port. It speaks the real wire format (the shapes the SDK's models and SSE parser expect):

- ``POST /v1/messages`` → a Message object, or with ``"stream": true`` an SSE stream
  (message_start, content_block_start, content_block_delta…, content_block_stop, message_delta,
  message_stop, with ping events mixed in);
- ``POST /v1/messages/count_tokens`` → ``{"input_tokens": N}``.

Tokens are estimated deterministically (1 per CJK character, 1 per 4 other characters). Prompt
caching is emulated: every ``cache_control`` breakpoint's prefix is hashed; a prefix seen before in
the server's lifetime is reported as ``cache_read_input_tokens``, the rest up to the last breakpoint
as ``cache_creation_input_tokens``, the remainder as ``input_tokens``.

Faults are queued with ``add_fault`` / ``fail_next`` and consumed one per request.

    with FakeAnthropic() as fake:
        fake.add_fault(OVERLOADED)
        client = anthropic.Anthropic(api_key="test", base_url=fake.base_url)
"""
from __future__ import annotations

import hashlib
import itertools
import json
import math
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

DEFAULT_REPLY = "夜色渐深，城门外的风雪裹着马蹄声而来，少年握紧了手中的剑。"

Reply = str | Callable[[dict[str, Any]], str]
FaultKind = Literal["http", "delay", "disconnect", "truncate", "stream_error"]


@dataclass(frozen=True)
class Fault:
    """One injected failure, consumed by the next request.

    ``http``: answer ``status`` with an error body of ``error_type``. ``delay``: sleep ``seconds``
    before answering normally (longer than the client timeout → the client times out).
    ``disconnect``: close the connection without any response. ``truncate``: stream
    ``after_deltas`` text deltas, then stop without message_stop (``abrupt`` drops the connection
    mid-body; otherwise the body ends cleanly but early). ``stream_error``: stream
    ``after_deltas`` deltas, then an SSE ``error`` event of ``error_type``. The stream faults only
    apply to streamed requests; a non-streamed request that draws one is answered normally.
    """

    kind: FaultKind
    status: int = 0
    error_type: str = ""
    seconds: float = 0.0
    after_deltas: int = 2
    abrupt: bool = True


def http_fault(status: int, error_type: str) -> Fault:
    return Fault("http", status=status, error_type=error_type)


RATE_LIMITED = http_fault(429, "rate_limit_error")
OVERLOADED = http_fault(529, "overloaded_error")
UNAVAILABLE = http_fault(503, "overloaded_error")
SERVER_ERROR = http_fault(500, "api_error")
BAD_REQUEST = http_fault(400, "invalid_request_error")
UNAUTHORIZED = http_fault(401, "authentication_error")
FORBIDDEN = http_fault(403, "permission_error")
NOT_FOUND = http_fault(404, "not_found_error")
TOO_LARGE = http_fault(413, "request_too_large")
DISCONNECT = Fault("disconnect")


def delay(seconds: float) -> Fault:
    return Fault("delay", seconds=seconds)


def truncated_stream(after_deltas: int = 2, *, abrupt: bool = True) -> Fault:
    return Fault("truncate", after_deltas=after_deltas, abrupt=abrupt)


def stream_error(error_type: str = "overloaded_error", after_deltas: int = 2) -> Fault:
    return Fault("stream_error", error_type=error_type, after_deltas=after_deltas)


ERROR_MESSAGES = {
    "rate_limit_error": "Number of request tokens has exceeded your per-minute rate limit",
    "overloaded_error": "Overloaded",
    "api_error": "Internal server error",
    "invalid_request_error": "messages: field required",
    "authentication_error": "invalid x-api-key",
    "permission_error": "Your API key does not have permission to use the specified resource.",
    "not_found_error": "Not found",
    "request_too_large": "Request exceeds the maximum allowed number of bytes.",
}


def error_body(error_type: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": ERROR_MESSAGES.get(error_type, error_type)}}


# --- token estimate and prefix cache ---------------------------------------------------------


def _is_cjk(char: str) -> bool:
    code = ord(char)
    return (0x3000 <= code <= 0x9FFF or 0xF900 <= code <= 0xFAFF or 0xFF00 <= code <= 0xFFEF
            or 0x20000 <= code <= 0x2FFFF)


def estimate_tokens(text: str) -> int:
    """1 token per CJK character, 1 per 4 other characters (rounded up)."""
    cjk = sum(1 for char in text if _is_cjk(char))
    return cjk + math.ceil((len(text) - cjk) / 4)


@dataclass(frozen=True)
class Segment:
    """One text block of the prompt, in order: system blocks first, then message blocks."""

    key: tuple[Any, ...]  # what identifies the block in a prefix (section, role, text)
    tokens: int
    breakpoint: bool
    ttl: str = "5m"


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content or [])


def _ttl(block: dict[str, Any]) -> str:
    return (block.get("cache_control") or {}).get("ttl", "5m")


def prompt_segments(body: dict[str, Any]) -> list[Segment]:
    segments: list[Segment] = []
    for block in _blocks(body.get("system")):
        text = block.get("text", "")
        segments.append(Segment(("system", text), estimate_tokens(text), bool(block.get("cache_control")),
                                _ttl(block)))
    for index, message in enumerate(body.get("messages") or []):
        for block in _blocks(message.get("content")):
            text = block.get("text", "")
            segments.append(Segment(("message", index, message.get("role"), text), estimate_tokens(text),
                                    bool(block.get("cache_control")), _ttl(block)))
    return segments


@dataclass(frozen=True)
class CacheUsage:
    input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    cache_creation_1h_input_tokens: int = 0


class PrefixCache:
    """Remembers the hashes of every breakpoint prefix seen (per model), for the server's lifetime.
    As the real API does, a breakpoint whose prefix is shorter than ``min_tokens`` caches nothing."""

    def __init__(self, min_tokens: int = 1024) -> None:
        self.min_tokens = min_tokens
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    @staticmethod
    def _hash(model: str, segments: list[Segment]) -> str:
        payload = json.dumps([model, [segment.key for segment in segments]], ensure_ascii=False)
        return hashlib.sha256(payload.encode()).hexdigest()

    def usage(self, model: str, segments: list[Segment]) -> CacheUsage:
        cumulative = list(itertools.accumulate(segment.tokens for segment in segments))
        total = cumulative[-1] if cumulative else 0
        breakpoints = [index for index, segment in enumerate(segments)
                       if segment.breakpoint and cumulative[index] >= self.min_tokens]
        if not breakpoints:
            return CacheUsage(total, 0, 0)
        hashes = {index: self._hash(model, segments[: index + 1]) for index in breakpoints}
        with self._lock:
            hits = [index for index in breakpoints if hashes[index] in self._seen]
            self._seen.update(hashes.values())
        read = cumulative[max(hits)] if hits else 0
        created = cumulative[breakpoints[-1]] - read
        hour = created if segments[breakpoints[-1]].ttl == "1h" else 0
        return CacheUsage(total - read - created, created, read, hour)

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()


# --- the server ------------------------------------------------------------------------------


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: dict[str, Any]
    usage: CacheUsage | None = None  # what the fake billed, for /v1/messages


@dataclass
class FakeAnthropic:
    """The fake API. Knobs may be changed between requests."""

    reply: Reply = DEFAULT_REPLY
    thinking: str | None = None  # if set, a thinking block precedes the text block
    chunk_chars: int = 4  # characters per streamed text delta
    ping_every: int = 3  # a ping event after every N deltas (and one after message_start)
    retry_after_ms: str | None = "1"  # sent on errors; "0" would make the SDK fall back to its backoff
    requests: list[RecordedRequest] = field(default_factory=list)
    cache: PrefixCache = field(default_factory=PrefixCache)

    def __post_init__(self) -> None:
        self._faults: deque[Fault] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._connections: set[socket.socket] = set()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # knobs ---------------------------------------------------------------------------------

    def add_fault(self, *faults: Fault) -> None:
        with self._lock:
            self._faults.extend(faults)

    def fail_next(self, count: int, fault: Fault = OVERLOADED) -> None:
        self.add_fault(*([fault] * count))

    def next_fault(self) -> Fault | None:
        with self._lock:
            return self._faults.popleft() if self._faults else None

    @property
    def message_requests(self) -> list[RecordedRequest]:
        return [request for request in self.requests if request.path == "/v1/messages"]

    def reply_for(self, body: dict[str, Any]) -> str:
        return self.reply(body) if callable(self.reply) else self.reply

    def next_id(self) -> int:
        with self._lock:
            return next(self._ids)

    # lifecycle -----------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        assert self._server is not None, "the fake is not running"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeAnthropic:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)  # port 0: a free one, loopback only
        server.daemon_threads = True
        server.block_on_close = False  # idle keep-alive handlers must not hold up stop()
        server.fake = self  # type: ignore[attr-defined]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-anthropic", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._stopping.set()  # wakes injected delays
        self._server.shutdown()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:  # unblock handlers waiting on a keep-alive connection
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # used by the handler
    def track(self, connection: socket.socket, *, open_: bool) -> None:
        with self._lock:
            (self._connections.add if open_ else self._connections.discard)(connection)

    def sleep(self, seconds: float) -> None:
        self._stopping.wait(seconds)


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive and chunked bodies, like the real API
    timeout = 30  # an idle keep-alive connection is dropped eventually
    server: ThreadingHTTPServer

    @property
    def fake(self) -> FakeAnthropic:
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
        pass  # keep test output clean

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw or b"{}")
        recorded = RecordedRequest("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        with self.fake._lock:
            self.fake.requests.append(recorded)
        request_id = f"req_fake_{self.fake.next_id():06d}"
        try:
            self._route(recorded, request_id)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True  # the client gave up (e.g. its timeout fired)

    def _route(self, recorded: RecordedRequest, request_id: str) -> None:
        fault = self.fake.next_fault()
        if fault is not None and fault.kind == "delay":
            self.fake.sleep(fault.seconds)
            fault = None
        if fault is not None and fault.kind == "disconnect":
            self.close_connection = True
            return
        if fault is not None and fault.kind == "http":
            self._send_error(fault.status, fault.error_type, request_id)
            return
        if not (recorded.headers.get("x-api-key") or recorded.headers.get("authorization")):
            self._send_error(401, "authentication_error", request_id)
            return
        if recorded.path == "/v1/messages/count_tokens":
            total = sum(segment.tokens for segment in prompt_segments(recorded.body))
            self._send_json(200, {"input_tokens": total}, request_id)
        elif recorded.path == "/v1/messages":
            self._messages(recorded, request_id, fault)
        else:
            self._send_error(404, "not_found_error", request_id)

    # responses -----------------------------------------------------------------------------

    def _send_json(self, status: int, payload: dict[str, Any], request_id: str,
                   extra_headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status, "Overloaded" if status == 529 else None)  # 529 is not in http.HTTPStatus
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", request_id)
        for name, value in (extra_headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, status: int, error_type: str, request_id: str) -> None:
        headers = {"retry-after": "0"}
        if self.fake.retry_after_ms is not None:
            headers["retry-after-ms"] = self.fake.retry_after_ms
        self._send_json(status, error_body(error_type), request_id, headers)

    def _messages(self, recorded: RecordedRequest, request_id: str, fault: Fault | None) -> None:
        body = recorded.body
        model = str(body.get("model", ""))
        usage = self.fake.cache.usage(model, prompt_segments(body))
        recorded.usage = usage
        text, stop_reason = _fit(self.fake.reply_for(body), int(body.get("max_tokens") or 0))
        message_id = f"msg_fake_{self.fake.next_id():06d}"
        if body.get("stream"):
            self._stream(message_id, model, usage, text, stop_reason, request_id, fault)
        else:
            message = _message(message_id, model, usage, self._content(text), stop_reason, estimate_tokens(text))
            self._send_json(200, message, request_id)

    def _content(self, text: str) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if self.fake.thinking is not None:
            blocks.append({"type": "thinking", "thinking": self.fake.thinking, "signature": "sig_fake"})
        blocks.append({"type": "text", "text": text, "citations": None})
        return blocks

    def _stream(self, message_id: str, model: str, usage: CacheUsage, text: str, stop_reason: str,
                request_id: str, fault: Fault | None) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", request_id)
        self.end_headers()
        for position, event in enumerate(self._events(message_id, model, usage, text, stop_reason, fault)):
            if event is None:  # a truncation point
                if not (fault and fault.abrupt):
                    self.wfile.write(b"0\r\n\r\n")  # end the body cleanly, but early
                self.close_connection = True
                return
            self._chunk(event)
        self.wfile.write(b"0\r\n\r\n")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _events(self, message_id: str, model: str, usage: CacheUsage, text: str, stop_reason: str,
                fault: Fault | None) -> Iterator[bytes | None]:
        """The SSE events of one streamed reply; None marks where a truncation fault cuts it."""
        start = _message(message_id, model, usage, [], None, 1)
        yield _sse("message_start", {"type": "message_start", "message": start})
        yield _sse("ping", {"type": "ping"})
        index = 0
        if self.fake.thinking is not None:
            yield from _thinking_events(index, self.fake.thinking)
            index += 1
        yield _sse("content_block_start", {"type": "content_block_start", "index": index,
                                           "content_block": {"type": "text", "text": "", "citations": None}})
        pieces = [text[i:i + self.fake.chunk_chars] for i in range(0, len(text), self.fake.chunk_chars)]
        for count, piece in enumerate(pieces, start=1):
            yield _sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                               "delta": {"type": "text_delta", "text": piece}})
            if fault is not None and count == fault.after_deltas:
                if fault.kind == "stream_error":
                    yield _sse("error", error_body(fault.error_type))
                    return  # nothing follows an error event; the body then ends normally
                if fault.kind == "truncate":
                    yield None
                    return
            if self.fake.ping_every and count % self.fake.ping_every == 0:
                yield _sse("ping", {"type": "ping"})
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
        yield _sse("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                                     "usage": {"output_tokens": estimate_tokens(text)}})
        yield _sse("message_stop", {"type": "message_stop"})


def _thinking_events(index: int, thinking: str) -> Iterator[bytes]:
    yield _sse("content_block_start", {"type": "content_block_start", "index": index,
                                       "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
    yield _sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                       "delta": {"type": "thinking_delta", "thinking": thinking}})
    yield _sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                       "delta": {"type": "signature_delta", "signature": "sig_fake"}})
    yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})


def _fit(text: str, max_tokens: int) -> tuple[str, str]:
    """Cut the reply to ``max_tokens`` (estimated) like the model would, with the matching stop reason."""
    if max_tokens <= 0 or estimate_tokens(text) <= max_tokens:
        return text, "end_turn"
    while text and estimate_tokens(text) > max_tokens:
        text = text[:-1]
    return text, "max_tokens"


def _message(message_id: str, model: str, usage: CacheUsage, content: list[dict[str, Any]],
             stop_reason: str | None, output_tokens: int) -> dict[str, Any]:
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage.input_tokens,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": usage.cache_creation_input_tokens,
            "cache_read_input_tokens": usage.cache_read_input_tokens,
            "cache_creation": {"ephemeral_5m_input_tokens": (usage.cache_creation_input_tokens
                                                             - usage.cache_creation_1h_input_tokens),
                               "ephemeral_1h_input_tokens": usage.cache_creation_1h_input_tokens},
            "service_tier": "standard",
        },
    }
