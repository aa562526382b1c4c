"""The #15 world-page attack as data: a small zip whose twelve world documents hold ~480,000
characters of Markdown each. Shared by tests/test_world_page_load.py and bench/bench_world_page.py."""
from __future__ import annotations

import io
import zipfile

DOCS = 12
DOC_CHARS = 480_000

_BLOCK = ("## 第{n}节 北境山川\n\n"
          "北境的雪原绵延千里，**星火宗**的旧址藏在群山之间，*传说*那里埋着一把断剑。`寒铁`产于此地。\n\n"
          "- 雪狼谷：终年积雪，狼群出没\n- 赤岩城：商旅往来之地，[地图](https://example.com/map)\n"
          "- 落星湖：湖底有古老的阵法\n\n"
          "> 老人说：山河犹在，宗门已亡。\n\n"
          "| 地名 | 势力 |\n| --- | --- |\n| 雪狼谷 | 北蛮 |\n| 赤岩城 | 商会 |\n\n")


def heavy_doc(number: int, chars: int = DOC_CHARS) -> str:
    parts, size, n = [], 0, 0
    while size < chars:
        block = _BLOCK.format(n=n + 1)
        parts.append(block)
        size += len(block)
        n += 1
    return f"# 世界设定 {number}\n\n" + "".join(parts)[:chars]


def heavy_world_zip(tree: dict[str, bytes], *, docs: int = DOCS, chars: int = DOC_CHARS) -> bytes:
    """``tree`` (an exported project's files) plus ``docs`` world documents of ``chars`` characters."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for path, data in tree.items():
            archive.writestr(path, data)
        for number in range(1, docs + 1):
            archive.writestr(f"world/heavy-{number:02d}.md", heavy_doc(number, chars).encode())
    return buffer.getvalue()
