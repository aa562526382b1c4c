"""The voice sample (issue #17 §3): keep a sample of the wanted voice with the statistics code
measures on it, and write what the style analyst made of it into the style profile."""
from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils.translation import gettext as _

from projects.errors import InvalidData
from projects.json_validation import json_issues
from projects.lock_objects import project_lock
from projects.models import Project, VoiceSample, VoiceSource
from projects.text_stats import count_chars
from projects.voice_stats import voice_statistics

MIN_CHARS = 300  # enough prose for 3 exemplars of 50+ characters and a meaningful spread
MAX_CHARS = 30_000  # about ten chapters; more says nothing new and costs prompt space
MAX_UPLOAD_BYTES = 512 * 1024
UPLOAD_SUFFIXES = (".txt", ".md", ".markdown")
# numeric fields of the style profile that the sample's statistics decide (facts §10.12)
MEASURED_FIELDS = ("avg_sentence_length", "sentence_length_range", "sentence_length_std_dev",
                   "paragraph_length_cv", "dialogue_ratio")


def sample_text_from_upload(data: bytes, name: str) -> str:
    """The text of an uploaded sample: a .txt or .md file in UTF-8 (a byte-order mark is allowed), at
    most 512 KiB, not binary. ``InvalidData`` with a message for a person otherwise."""
    if not name.lower().endswith(UPLOAD_SUFFIXES):
        raise InvalidData(_("Upload a .txt or .md file."))
    if len(data) > MAX_UPLOAD_BYTES:
        raise InvalidData(_("The file is larger than %(kib)d KiB; upload a shorter sample.")
                          % {"kib": MAX_UPLOAD_BYTES // 1024})
    if b"\0" in data:
        raise InvalidData(_("The file is not a text file."))
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidData(_("The file is not UTF-8 text (it may be GBK): save it as UTF-8 and upload it again.")) \
            from exc
    controls = sum(1 for ch in text if ord(ch) < 32 and ch not in "\n\r\t")
    if controls > max(3, len(text) // 1000):
        raise InvalidData(_("The file is not a text file."))
    return text


def clean_sample_text(text: str) -> str:
    """Line breaks made ``\\n``, surrounding blank space dropped; ``InvalidData`` when the sample is too
    short or too long (counted in 字, without whitespace)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff").strip()
    size = count_chars(text)
    if size < MIN_CHARS:
        raise InvalidData(_("The sample has %(size)d characters; give at least %(least)d.")
                          % {"size": size, "least": MIN_CHARS})
    if size > MAX_CHARS:
        raise InvalidData(_("The sample has %(size)d characters; give at most %(most)d.")
                          % {"size": size, "most": MAX_CHARS})
    return text


@transaction.atomic
def voice_sample_save(*, project: Project, editor: AbstractBaseUser | None, text: str,
                      source_type: str = VoiceSource.ORIGINAL, file_name: str = "") -> VoiceSample:
    """Keep ``text`` as the project's voice sample (replacing an earlier one) with its statistics,
    computed now. The caller starts the style analyst. Locks: the project."""
    if source_type not in VoiceSource.values:
        raise InvalidData(_("Say whose writing the sample is."))
    text = clean_sample_text(text)
    statistics = voice_statistics(text)
    project_lock(project.pk)
    sample, _created = VoiceSample.objects.update_or_create(project=project, defaults={
        "text": text, "source_type": source_type, "file_name": file_name[:200], "statistics": statistics,
        "updated_by": editor})
    return sample


@transaction.atomic
def voice_sample_delete(*, project: Project) -> None:
    """Forget the sample: the platform's and genre's defaults give the targets again. The style
    profile keeps what the analyst wrote into it."""
    project_lock(project.pk)
    VoiceSample.objects.filter(project=project).delete()


def profile_with_statistics(profile: dict[str, Any], statistics: dict[str, Any], *,
                            source_type: str) -> dict[str, Any]:
    """The analyst's profile with the code-measured numbers in place of whatever the model claimed
    (issue #17 §3): ``MEASURED_FIELDS``, ``paragraph_style.avg_paragraph_length`` and ``source_type``.
    A measure the sample is too short for (None) leaves the field out."""
    out = dict(profile)
    for name in MEASURED_FIELDS:
        value = statistics.get(name)
        if value is None:
            out.pop(name, None)
        else:
            out[name] = list(value) if isinstance(value, list) else value
    paragraph_style = out.get("paragraph_style") if isinstance(out.get("paragraph_style"), dict) else {}
    out["paragraph_style"] = {**paragraph_style, "avg_paragraph_length": statistics["avg_paragraph_length"]}
    out["source_type"] = source_type
    return out


@transaction.atomic
def style_profile_from_voice(*, project: Project, profile: dict[str, Any]) -> None:
    """Store the style analyst's profile (already merged with the sample's statistics). Locks: the project."""
    if issues := json_issues("STYLE_PROFILE", profile):
        raise InvalidData("style_profile: " + "; ".join(map(str, issues)))
    project_lock(project.pk)
    Project.objects.filter(pk=project.pk).update(style_profile=profile)
