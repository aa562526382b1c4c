"""A reading copy of the book: the committed chapters in order, under their volume headings, as
plain text (UTF-8) or EPUB 3 (ebooklib). Not the canonical tree (``filetree.export``): a copy to
read on a phone or an e-reader, or to send to an editor.

Chapters are read in batches with only the columns the copy needs, so a book of a thousand
chapters never sits in memory as model instances; the EPUB is assembled in a temporary file that
spills to disk past a few megabytes.
"""
from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from html import escape
from typing import IO

from ebooklib import epub

from projects.models import Chapter, Project

BATCH = 100  # chapters per query
SPOOL_BYTES = 8 * 1024 * 1024  # an EPUB larger than this is assembled on disk


@dataclass(frozen=True)
class CopyChapter:
    number: int
    title: str
    paragraphs: list[str]
    volume_number: int | None
    volume_title: str


def chapter_heading(chapter: CopyChapter) -> str:
    return f"第{chapter.number}章 {chapter.title}".strip()


def volume_heading(number: int | None, title: str) -> str:
    if number is None:
        return title
    return f"第{number}卷 {title}".strip()


def book_chapters(project: Project) -> Iterator[CopyChapter]:
    """The committed chapters in order, a batch of ``BATCH`` at a time."""
    rows = (Chapter.objects.filter(project=project).order_by("number")
            .values_list("number", "title", "text", "volume__number", "volume__title"))
    last = 0
    while True:
        batch = list(rows.filter(number__gt=last)[:BATCH])
        if not batch:
            return
        for number, title, text, volume_number, volume_title in batch:
            paragraphs = [line.strip() for line in (text or "").splitlines() if line.strip()]
            yield CopyChapter(number, title or "", paragraphs, volume_number, volume_title or "")
        last = batch[-1][0]


def book_txt(project: Project) -> Iterator[str]:
    """The book as plain text, in pieces (one chapter each) for a streamed response."""
    yield f"{project.title}\n\n"
    if project.brief:
        yield f"{project.brief.strip()}\n\n"
    volume = object()
    for chapter in book_chapters(project):
        if chapter.volume_number != volume:
            volume = chapter.volume_number
            yield f"\n{volume_heading(chapter.volume_number, chapter.volume_title)}\n\n"
        body = "\n\n".join(f"\u3000\u3000{p}" for p in chapter.paragraphs)  # two ideographic spaces indent
        yield f"{chapter_heading(chapter)}\n\n{body}\n\n"


_CSS = ("body { font-family: serif; line-height: 1.8; } h1, h2 { text-align: center; } "
        "p { text-indent: 2em; margin: 0 0 0.6em; }")


def book_epub(project: Project) -> IO[bytes]:
    """The book as an EPUB 3 file, rewound, for a streamed response (the caller closes it)."""
    book = epub.EpubBook()
    book.set_identifier(f"novelsite:{project.slug}")
    book.set_title(project.title)
    book.set_language("zh")
    book.add_metadata("DC", "description", project.brief or "")
    style = epub.EpubItem(uid="style", file_name="style.css", media_type="text/css", content=_CSS)
    book.add_item(style)

    toc: list = []
    spine: list = ["nav"]
    volume, volume_items = object(), None
    for chapter in book_chapters(project):
        if chapter.volume_number != volume:
            volume = chapter.volume_number
            heading = volume_heading(chapter.volume_number, chapter.volume_title)
            page = _page(f"volume-{chapter.volume_number or 0}.xhtml", heading, f"<h1>{escape(heading)}</h1>", style)
            book.add_item(page)
            spine.append(page)
            volume_items = []
            toc.append((epub.Section(heading, href=page.file_name), volume_items))
        heading = chapter_heading(chapter)
        body = "".join(f"<p>{escape(p)}</p>" for p in chapter.paragraphs)
        page = _page(f"chapter-{chapter.number:04d}.xhtml", heading, f"<h2>{escape(heading)}</h2>{body}", style)
        book.add_item(page)
        spine.append(page)
        volume_items.append(page)
    book.toc = toc
    book.spine = spine
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())

    out = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)
    epub.write_epub(out, book)
    out.seek(0)
    return out


def _page(file_name: str, title: str, body: str, style: epub.EpubItem) -> epub.EpubHtml:
    page = epub.EpubHtml(title=title, file_name=file_name, lang="zh")
    page.content = f"<html><head><title>{escape(title)}</title></head><body>{body}</body></html>"
    page.add_item(style)
    return page
