"""A fast offline token estimator. The real tokenizer is only reachable through the API
(``count_tokens``); budgets and benchmarks use this estimate, and receipts say which one counted.

The constants are deliberately a little pessimistic for Claude's tokenizer on web-novel text, so
a prompt that fits the estimate fits the real budget too.
"""
from __future__ import annotations

import re

# Tokens per character, by kind of text. CJK ideographs and fullwidth punctuation cost about one
# token each; other prose about one per four characters; JSON, dense with quotes, braces and short
# keys, about one per three.
CJK_TOKENS_PER_CHAR = 1.0
TEXT_TOKENS_PER_CHAR = 0.25
JSON_TOKENS_PER_CHAR = 0.34
PER_BLOCK_OVERHEAD = 4  # role markers and separators around every block

_CJK_RUNS = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]+")


def estimate_tokens(text: str, *, kind: str = "text") -> int:
    """Estimated tokens of ``text``; ``kind`` is "text" or "json" (for the non-CJK part)."""
    if not text:
        return 0
    cjk = len(text) - len(_CJK_RUNS.sub("", text))  # runs, not characters: one match per run
    other = len(text) - cjk
    rate = JSON_TOKENS_PER_CHAR if kind == "json" else TEXT_TOKENS_PER_CHAR
    return int(cjk * CJK_TOKENS_PER_CHAR + other * rate + 0.999)


def looks_like_json(text: str) -> bool:
    stripped = text.lstrip()
    return stripped[:1] in ("{", "[")
