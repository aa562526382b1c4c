"""Jacquard figures: assembly time of a 200-block Skein, and the Filament parser's throughput on a
1 MB stream fed in 64-byte chunks. Pure Python, no database.

    .venv/bin/python bench/bench_jacquard.py
"""
from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.jacquard.filament import FilamentParser  # noqa: E402
from pipeline.jacquard.skein import Injection, PromptBlock, Skein, assemble  # noqa: E402

TAGS = ("thought", "chapter", "summary", "state_update", "reply")


def build_skein(rng: random.Random) -> Skein:
    skein = Skein()
    for i in range(200):
        text = "林枫走进雪原，风很冷。" * rng.randint(5, 60)
        role = "system" if i < 20 else rng.choice(["user", "assistant"])
        injection = Injection(rng.choice(["relativeToStart", "relativeToEnd"]), rng.randint(0, 30)) if i % 5 == 0 \
            else None
        skein.add(PromptBlock(f"b{i}", role, text, priority=rng.randint(0, 100), injection=injection,
                              cacheable=i < 10, required=i % 40 == 0, shrinkable=i % 3 == 0))
    return skein


def bench_assembly(runs: int = 50) -> tuple[float, float, int, int]:
    timings, trimmed, total = [], 0, 0
    for run in range(runs):
        skein = build_skein(random.Random(run))
        started = time.perf_counter()
        result = assemble(skein, budget=12_000)
        timings.append((time.perf_counter() - started) * 1000)
        trimmed, total = len(result.trimmed), result.total_tokens
    return statistics.median(timings), max(timings), trimmed, total


def make_stream(size: int = 1_000_000) -> str:
    rng = random.Random(7)
    parts, length = [], 0
    while length < size:
        part = rng.choice([
            "<thought>先想想 a < b 的情况。</thought>",
            "<chapter>" + "雪夜里，林枫推开门。" * rng.randint(5, 40) + "</chapter>",
            ('<state_update>[["SET", "characters.lin-feng.location", "雪原"], '
             '["ADD", "characters.lin-feng.relationships.chen-lao", 5]]</state_update>'),
            "无关的文字 <b>粗体</b> 与 <unknown>标签</unknown>。",
        ])
        parts.append(part)
        length += len(part.encode())
    return "".join(parts)


def bench_parser() -> tuple[float, int]:
    stream = make_stream()
    data = stream.encode()
    chunks = [data[i:i + 64].decode("utf-8", errors="ignore") for i in range(0, len(data), 64)]
    best = float("inf")
    for _ in range(3):
        parser = FilamentParser(TAGS)
        started = time.perf_counter()
        for chunk in chunks:
            parser.feed(chunk)
        parser.close()
        result = parser.result()
        best = min(best, time.perf_counter() - started)
    return len(data) / 1_000_000 / best, len(result.ops)


def main() -> None:
    median_ms, worst_ms, trimmed, total = bench_assembly()
    print("Skein assembly, 200 blocks (weave + budget 12K + cache order), 50 runs:")
    print(f"  median {median_ms:.2f} ms, max {worst_ms:.2f} ms; last run trimmed {trimmed} blocks, kept {total} tokens")
    mb_per_s, ops = bench_parser()
    print("Filament parser, 1 MB stream in 64-byte chunks:")
    print(f"  {mb_per_s:.1f} MB/s ({ops} state ops parsed)")


if __name__ == "__main__":
    main()
