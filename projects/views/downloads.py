"""Downloads of a project for any member: the canonical tree (zip, novel-writer-cli's layout) and a
reading copy of the book (TXT or EPUB), streamed."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, StreamingHttpResponse
from django.utils.encoding import escape_uri_path
from django.utils.translation import gettext as _
from django.views.decorators.http import require_safe

from projects.filetree.export import zip_stream
from projects.reading_copy import book_epub, book_txt
from projects.views.access import project_access


def _attachment(response, project, extension: str):
    # The title may be Chinese: an ASCII name for old clients, the UTF-8 title for the others (RFC 6266).
    title = escape_uri_path(f"{project.title}.{extension}")
    response["Content-Disposition"] = f"attachment; filename=\"{project.slug}.{extension}\"; filename*=UTF-8''{title}"
    return response


@login_required
@require_safe
def book_download(request, slug: str, kind: str):
    access = project_access(request, slug)
    project = access.project
    if kind == "txt":
        text = (piece.encode("utf-8") for piece in book_txt(project))
        return _attachment(StreamingHttpResponse(text, content_type="text/plain; charset=utf-8"), project, "txt")
    if kind == "epub":
        return _attachment(FileResponse(book_epub(project), content_type="application/epub+zip"), project, "epub")
    if kind == "zip":
        return _attachment(StreamingHttpResponse(zip_stream(project), content_type="application/zip"), project, "zip")
    raise Http404(_("No such download."))
