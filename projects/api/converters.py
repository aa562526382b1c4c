"""URL converters of the API. ``<id:...>`` is a positive integer of at most 9 digits: a longer one
would overflow the database's integer columns (a 500) instead of being simply not found (404)."""
from __future__ import annotations

from django.urls import register_converter


class BoundedIntConverter:
    regex = "[0-9]{1,9}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


register_converter(BoundedIntConverter, "id")  # once: this module is imported once
