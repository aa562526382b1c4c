"""Long user texts (world documents, character profiles) shown in parts: the world page shows at
most ``INLINE_CHARS`` of each, folded, with a link to the reader, which shows ``PAGE_CHARS`` per
page. Parts end at a paragraph (or at least a line) break where there is one, so Markdown blocks
are rarely cut; a cut one is still sanitised like any other source."""
from __future__ import annotations

INLINE_CHARS = 8_000  # shown whole on the world page up to this length; longer ones are excerpted
PAGE_CHARS = 30_000  # one page of the reader; Python-Markdown renders this in ~0.1 s


def text_pages(text: str, size: int = PAGE_CHARS) -> list[str]:
    """``text`` cut into parts of at most ``size`` characters (always at least one part)."""
    pages: list[str] = []
    start = 0
    while len(text) - start > size:
        cut = _break_before(text, start, start + size)
        pages.append(text[start:cut])
        start = cut
    pages.append(text[start:])
    return pages


def text_excerpt(head: str, length: int, size: int = INLINE_CHARS) -> tuple[str, bool]:
    """The part of a text shown inline, from its first ``size + 1`` characters (``head``) and its
    full ``length``; and whether the text was folded."""
    if length <= size:
        return head, False
    return text_pages(head, size)[0], True


def _break_before(text: str, start: int, end: int) -> int:
    earliest = start + (end - start) // 2  # never a part shorter than half a page
    for separator in ("\n\n", "\n"):
        at = text.rfind(separator, earliest, end)
        if at >= 0:
            return at + len(separator)
    return end
