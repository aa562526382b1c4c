"""Hostile uploads (#15, availability): a zip is judged by what it declares before anything is
inflated, and a request body too large for its endpoint is refused from its Content-Length, before
a byte of it is read, with a clear message (the API's error shape on the API) and nothing written."""
from __future__ import annotations

import io
import random
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from projects.filetree import source as source_module
from projects.filetree.errors import TreeError
from projects.filetree.source import Limits, read_zip
from projects.models import Project

LIMITS = Limits(max_file_bytes=10 * 1024 * 1024, max_tree_bytes=200 * 1024 * 1024, max_files=20_000)


def zip_bytes(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


@pytest.fixture
def inflated(monkeypatch) -> list[str]:
    """The entries read (inflated) from any zip during the test."""
    opened: list[str] = []
    real_open = zipfile.ZipFile.open

    def counting_open(self, name, mode="r", *args, **kwargs):
        if mode == "r":  # writing the test's own zips is not inflating
            opened.append(getattr(name, "filename", name))
        return real_open(self, name, mode, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "open", counting_open)
    return opened


def test_a_small_zip_declaring_a_tree_over_the_limit_is_refused_before_inflating(inflated):
    # 21 files of 10 MB of spaces: each under the per-file limit, 210 MB together; ~200 KB zipped.
    bomb = zip_bytes({"brief.md": b"# ok"} | {f"logs/part-{n:02d}.json": b" " * LIMITS.max_file_bytes
                                                for n in range(21)})
    assert len(bomb) < 300_000
    with pytest.raises(TreeError) as caught:
        read_zip(io.BytesIO(bomb), LIMITS)
    assert caught.value.path == "(archive)"
    assert "larger than the limit of 209715200 bytes" in caught.value.reason
    assert inflated == []  # judged from the central directory alone


def test_too_many_entries_are_refused_from_the_end_record_before_the_directory_is_parsed(monkeypatch):
    many = zip_bytes({f"research/note-{n}.md": b"x" for n in range(30)})

    def never(*args, **kwargs):
        raise AssertionError("the central directory was parsed")

    monkeypatch.setattr(source_module.zipfile, "ZipFile", never)
    with pytest.raises(TreeError) as caught:
        read_zip(io.BytesIO(many), Limits(max_file_bytes=100, max_tree_bytes=10_000, max_files=10))
    assert (caught.value.path, caught.value.reason) == ("(archive)", "30 files; the limit is 10")


def test_an_entry_declaring_more_than_the_file_limit_is_refused_before_inflating(inflated):
    archive = zip_bytes({"brief.md": b"# ok", "world/huge.md": b"a" * 2_000_000})
    with pytest.raises(TreeError) as caught:
        read_zip(io.BytesIO(archive), Limits(max_file_bytes=1_000_000, max_tree_bytes=10**8, max_files=100))
    assert caught.value.path == "world/huge.md" and "the limit is 1000000" in caught.value.reason
    assert inflated == []


@pytest.mark.parametrize("garbage", [b"", b"PK\x05\x06", b"PK\x05\x06" + b"\xff" * 18, b"not a zip" * 1000],
                         ids=["empty", "truncated-end-record", "end-record-only", "text"])
def test_garbage_is_refused_as_not_a_zip(garbage):
    with pytest.raises(TreeError) as caught:
        read_zip(io.BytesIO(garbage), LIMITS)
    assert caught.value.path == "(archive)"
    assert "not a readable zip file" in caught.value.reason or "65535 files" in caught.value.reason


# --- request bodies --------------------------------------------------------------------------------

MB = 1024 * 1024


class Tripwire(io.RawIOBase):
    """A request body that must never be read."""

    reads = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        Tripwire.reads += 1
        raise AssertionError("the request body was read")


def declared_post(client, path: str, length: int, content_type: str = "multipart/form-data; boundary=XYZ"):
    Tripwire.reads = 0
    return client.generic("POST", path, b"", content_type=content_type,
                          **{"CONTENT_LENGTH": str(length), "wsgi.input": Tripwire()})


@pytest.mark.django_db
def test_a_400_mb_import_over_the_api_is_refused_before_its_body_is_read(make_user):
    client = APIClient()
    client.force_authenticate(make_user("bob"))
    response = declared_post(client, "/api/projects/import", 400 * MB)
    assert response.status_code == 413 and Tripwire.reads == 0
    body = response.json()
    assert body["code"] == "too_large" and set(body) == {"code", "message", "extra"}
    assert body["extra"] == {"max_bytes": 50 * MB, "content_length": 400 * MB}
    assert "at most 52428800 bytes (50.0 MB)" in body["message"]
    assert not Project.objects.exists()


@pytest.mark.django_db
def test_a_400_mb_import_from_the_page_is_refused_in_chinese_before_its_body_is_read(client, make_user):
    client.force_login(make_user("bob"))
    response = declared_post(client, "/import/", 400 * MB)
    assert response.status_code == 413 and Tripwire.reads == 0
    page = response.content.decode().replace("\xa0", " ")  # filesizeformat joins with a no-break space
    assert "上传过大" in page and "400.0 MB" in page and "50.0 MB" in page
    assert not Project.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/new/", "/p/anything/settings/", "/login/", "/api/projects",
                                  "/admin/projects/project/add/"])
def test_any_other_view_refuses_a_body_over_the_form_limit_before_reading_it(client, make_user, path):
    client.force_login(make_user("bob", superuser=True))
    response = declared_post(client, path, 3 * MB)
    assert response.status_code == 413 and Tripwire.reads == 0
    if path.startswith("/api/"):
        assert response.json()["extra"]["max_bytes"] == 2_621_440


@pytest.mark.django_db
def test_an_upload_over_a_lowered_limit_is_refused_and_creates_nothing(client, make_user, settings):
    settings.NOVELSITE_IMPORT_MAX_UPLOAD_BYTES = 4000
    archive = zip_bytes({"brief.md": random.Random(15).randbytes(6000)})
    assert len(archive) > 4000
    api = APIClient()
    api.force_authenticate(make_user("bob"))
    upload = SimpleUploadedFile("book.zip", archive, content_type="application/zip")
    response = api.post("/api/projects/import", {"file": upload, "slug": "big"}, format="multipart")
    assert response.status_code == 413 and response.json()["extra"]["max_bytes"] == 4000
    client.force_login(make_user("carol"))
    upload = SimpleUploadedFile("book.zip", archive, content_type="application/zip")
    response = client.post("/import/", {"archive": upload, "slug": "big"})
    assert response.status_code == 413
    assert not Project.objects.filter(slug="big").exists()


def test_the_import_form_names_its_limit_and_checks_the_file_itself(settings):
    from projects.views.projects import ProjectImportForm

    settings.NOVELSITE_IMPORT_MAX_UPLOAD_BYTES = 1000
    form = ProjectImportForm({}, {"archive": SimpleUploadedFile("a.zip", b"x" * 1001)})
    assert not form.is_valid() and "archive" in form.errors
    assert "1000" in str(form.fields["archive"].help_text) or "1000" in str(form.errors)
