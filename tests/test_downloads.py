"""The dashboard's downloads: the book to read (EPUB, TXT: chapters in order under their volume
headings) and the canonical tree (zip), for any member of the project and nobody else."""
from __future__ import annotations

import io
import zipfile
from urllib.parse import unquote

import pytest
from django.test import Client
from django.urls import reverse
from ebooklib import ITEM_DOCUMENT, epub

from projects.models import Chapter, Volume
from projects.reading_copy import book_chapters
from projects.sample_project import sample_project_create
from tests.conftest import member_client as member

pytestmark = pytest.mark.django_db


@pytest.fixture
def book(make_user):
    owner = make_user("owner", staff=False)
    project = sample_project_create(owner=owner)
    first = project.volumes.get(number=1)
    second = Volume.objects.create(project=project, number=2, title="南渡")
    for number, volume in ((1, first), (2, first), (3, second)):
        Chapter.objects.create(project=project, volume=volume, number=number, title=f"夜{number}",
                               text=f"第{number}章的第一段。\n\n“你来了。”她说。<b>不是标签</b>\n")
    return project




def body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def test_the_book_as_text_has_its_volumes_and_chapters_in_order(book, make_user):
    response = member(book, make_user, "viewer").get(reverse("download", args=[book.slug, "txt"]))

    assert response.status_code == 200 and response["Content-Type"] == "text/plain; charset=utf-8"
    text = body(response).decode("utf-8")
    assert text.startswith("星火长夜\n")
    order = [text.index(s) for s in ("第1卷 雪原", "第1章 夜1", "第2章 夜2", "第2卷 南渡", "第3章 夜3")]
    assert order == sorted(order)
    assert "\u3000\u3000“你来了。”她说。<b>不是标签</b>" in text
    disposition = response["Content-Disposition"]
    assert 'filename="demo.txt"' in disposition and "星火长夜.txt" in unquote(disposition)


def test_the_book_as_epub_opens_with_a_table_of_contents_by_volume(book, make_user, tmp_path):
    response = member(book, make_user, "viewer").get(reverse("download", args=[book.slug, "epub"]))

    assert response.status_code == 200 and response["Content-Type"] == "application/epub+zip"
    path = tmp_path / "book.epub"
    path.write_bytes(body(response))
    read = epub.read_epub(str(path))
    assert read.get_metadata("DC", "title")[0][0] == "星火长夜"
    assert read.get_metadata("DC", "language")[0][0] == "zh"
    chapters = [item for item in read.get_items_of_type(ITEM_DOCUMENT) if item.file_name.startswith("chapter-")]
    assert [c.file_name for c in chapters] == ["chapter-0001.xhtml", "chapter-0002.xhtml", "chapter-0003.xhtml"]
    html = chapters[2].get_content().decode("utf-8")
    assert "第3章 夜3" in html and "&lt;b&gt;不是标签&lt;/b&gt;" in html  # the text, escaped
    assert [section.title for section, _items in read.toc] == ["第1卷 雪原", "第2卷 南渡"]
    assert [len(items) for _section, items in read.toc] == [2, 1]


def test_the_tree_is_the_canonical_zip(book, make_user):
    response = member(book, make_user, "viewer").get(reverse("download", args=[book.slug, "zip"]))

    assert response.status_code == 200
    names = zipfile.ZipFile(io.BytesIO(body(response))).namelist()
    assert "chapters/chapter-001.md" in names and ".checkpoint.json" in names


def test_downloads_are_for_members_only(book, make_user):
    stranger = make_user("stranger", staff=False)
    client = Client()
    client.force_login(stranger)
    for kind in ("txt", "epub", "zip"):
        assert client.get(reverse("download", args=[book.slug, kind])).status_code == 404
    assert Client().get(reverse("download", args=[book.slug, "txt"])).status_code == 302  # to log in
    assert member(book, make_user, "viewer").get(reverse("download", args=[book.slug, "pdf"])).status_code == 404


def test_the_dashboard_offers_the_downloads(book, make_user):
    page = member(book, make_user, "viewer").get(reverse("dashboard", args=[book.slug])).content.decode()
    for kind in ("epub", "txt", "zip"):
        assert reverse("download", args=[book.slug, kind]) in page


def test_a_long_book_is_read_in_batches(book, django_assert_max_num_queries):
    volume = book.volumes.get(number=1)
    Chapter.objects.bulk_create(Chapter(project=book, volume=volume, number=n, title="", text="段。")
                                for n in range(4, 404))
    with django_assert_max_num_queries(6):  # 403 chapters, 100 a query
        assert len(list(book_chapters(book))) == 403
