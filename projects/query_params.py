"""Whole numbers from query parameters and form fields, parsed one way everywhere.

``str.isdigit()`` accepts "²" and "١" that ``int()`` refuses (a 500), and ``int()`` accepts
" 7", "+7", "7_000" and numbers too large for the database's integer columns. Here a number is
1 to 9 ASCII digits, as in the URL converter ``<id:...>`` (``projects/api/converters.py``)."""
from __future__ import annotations

import re
from collections.abc import Mapping

from projects.errors import NotFound

_PLAIN_NUMBER = re.compile(r"[0-9]{1,9}")


def plain_int(value: object) -> int | None:
    """``value`` as an int if it is a plain number (surrounding spaces allowed), else None."""
    if not isinstance(value, str):
        return None
    value = value.strip()
    return int(value) if _PLAIN_NUMBER.fullmatch(value) else None


def query_int(params: Mapping[str, str], name: str) -> int | None:
    """The number in ``?name=``: None when the parameter is absent or blank; a value that is not a
    plain number names nothing that exists, so it is NotFound (404 on the API and on the web pages)."""
    raw = params.get(name)
    if raw is None or not raw.strip():
        return None
    number = plain_int(raw)
    if number is None:
        raise NotFound(f"No such {name}: {raw[:20]!r} is not a number.")
    return number
