"""Finished LLM calls kept in the database (``LLMCall``), so that a task redelivered after a crash
reuses the output instead of paying for the call again. Keys are ``run:stage:attempt:sequence``:
a retry after a failed attempt gets a new key and a new answer."""
from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db import InterfaceError, OperationalError

from pipeline.runtime.db_connection import connection_drop_if_broken
from pipeline.llm.cache_policy import plan_cache
from pipeline.llm.types import LLMRequest, LLMResult, Usage
from pipeline.models import LLMCall


def call_key(run_id: int, stage: str, attempt: int, sequence: int | str = 1) -> str:
    return f"run{run_id}:{stage}:{attempt}:{sequence}"


def prompt_record(request: LLMRequest) -> dict[str, Any]:
    """The request as the model received it, for people to read on the run page: the system blocks
    and the messages in order, each block marked where a cache breakpoint followed it. Empty blocks
    are left out, as the backends leave them out."""
    system = [block for block in request.system if block.text]
    messages = [(message.role, [block for block in message.blocks if block.text]) for message in request.messages]
    marks = plan_cache(system, [blocks for _role, blocks in messages], model=request.model,
                       ttl=request.cache_ttl).marks
    record: dict[str, Any] = {"system": [{"text": block.text, "cache_breakpoint": (0, index) in marks}
                                         for index, block in enumerate(system)], "messages": []}
    position = 0
    for role, blocks in messages:
        record["messages"].append({"role": role, "blocks": [
            {"text": block.text, "cache_breakpoint": (1, position + index) in marks}
            for index, block in enumerate(blocks)]})
        position += len(blocks)
    return record


class DbCallStore:
    def __init__(self, *, run_id: int, stage_run_id: int | None, lookup: bool = True) -> None:
        # lookup=False: this attempt never ran before (no worker died in it), so none of its keys
        # can be stored yet and the lookups are skipped
        self.run_id, self.stage_run_id, self.lookup = run_id, stage_run_id, lookup

    def get(self, key: str) -> LLMResult | None:
        if not self.lookup:
            return None
        row = LLMCall.objects.filter(call_key=key).defer("prompt").first()
        if row is None:
            return None
        usage = Usage(**{k: int(row.usage.get(k, 0)) for k in ("input_tokens", "output_tokens",
                                                               "cache_creation_input_tokens",
                                                               "cache_read_input_tokens")})
        return LLMResult(text=row.output_text, stop_reason=row.stop_reason, usage=usage, cost_usd=row.cost_usd,
                         duration_ms=row.duration_ms, request_id=row.request_id, model=row.model,
                         backend=row.backend, currency=row.currency, cost_known=row.cost_known,
                         usage_source=str(row.usage.get("counted_by", "api")))

    def put(self, key: str, result: LLMResult, receipt: dict[str, Any], request: LLMRequest | None = None) -> None:
        # autocommit: stored before the stage advances, so it survives a crash of this worker. A
        # twin that stored the same key first wins (one INSERT, no savepoint: this is a hot path).
        row = LLMCall(
            call_key=key, run_id=self.run_id, stage_run_id=self.stage_run_id, backend=result.backend,
            model=result.model, request_sha256=receipt.get("prompt_sha256", ""), output_text=result.text,
            stop_reason=result.stop_reason, usage={**result.usage.as_dict(), "counted_by": result.usage_source},
            cost_usd=Decimal(result.cost_usd), currency=result.currency, cost_known=result.cost_known,
            duration_ms=result.duration_ms, request_id=result.request_id,
            prompt=prompt_record(request) if request is not None else {},
        )
        try:
            LLMCall.objects.bulk_create([row], ignore_conflicts=True)
        except (OperationalError, InterfaceError):
            # The connection may have died while the call ran (it sat idle all that time). The
            # answer is paid for: store it on a new connection rather than pay for it again.
            # (Storing twice is harmless: a stored key is kept.)
            if not connection_drop_if_broken():
                raise
            LLMCall.objects.bulk_create([row], ignore_conflicts=True)
