"""The translations: every message of the web pages has a Chinese translation, and the compiled
.mo files (committed, so that a deployment needs no gettext tools) match their .po sources."""
from __future__ import annotations

import gettext
import re
from pathlib import Path

import pytest

LOCALE = Path(__file__).resolve().parent.parent / "locale"
ENTRY = re.compile(r'^msgid ((?:".*"\n)+)msgstr ((?:".*"\n?)+)', re.M)
CONTEXT = re.compile(r'^msgctxt ((?:".*"\n)+)', re.M)


def po_entries(path: Path) -> dict[str, str]:
    def text(block: str) -> str:
        raw = "".join(re.findall(r'"(.*)"', block))
        return raw.encode("latin-1", "backslashreplace").decode("unicode_escape").encode("latin-1").decode("utf-8") \
            if "\\" in raw else raw
    entries = {}
    for chunk in path.read_text(encoding="utf-8").split("\n\n"):
        if "#, fuzzy" in chunk or "msgid_plural" in chunk:
            continue
        match = ENTRY.search(chunk + "\n")
        if match:
            context = CONTEXT.search(chunk)  # pgettext: the catalogue keys it as "context\x04msgid"
            prefix = text(context.group(1)) + "\x04" if context else ""
            entries[prefix + text(match.group(1))] = text(match.group(2))
    entries.pop("", None)
    return entries


@pytest.mark.parametrize("language", ["zh_Hans", "en"])
def test_the_compiled_catalogue_matches_its_source(language):
    folder = LOCALE / language / "LC_MESSAGES"
    with open(folder / "django.mo", "rb") as handle:
        catalogue = gettext.GNUTranslations(handle)
    for msgid, msgstr in po_entries(folder / "django.po").items():
        assert catalogue.gettext(msgid) == (msgstr or msgid), f"{language}: {msgid!r} is stale; compilemessages"


def test_every_message_has_a_chinese_translation():
    missing = [msgid for msgid, msgstr in po_entries(LOCALE / "zh_Hans" / "LC_MESSAGES" / "django.po").items()
               if not msgstr]
    assert not missing
