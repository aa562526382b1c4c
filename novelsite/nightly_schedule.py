"""When the nightly autopilot batches start: ``NOVELSITE_NIGHTLY_AT`` ("HH:MM", 24-hour clock, in
``TIME_ZONE``). Imported by the settings module, so it must not touch Django's settings or apps."""
from __future__ import annotations

import re

from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

_HH_MM = re.compile(r"([0-9]{1,2}):([0-9]{2})")  # ASCII digits only (\d would take "０２:００")


def nightly_at_parse(value: str) -> tuple[int, int]:
    """``"02:00"`` → ``(2, 0)``. Anything else is refused at start-up with the value named: a
    typo here would otherwise silently move (or stop) every project's nightly batch."""
    match = _HH_MM.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is not None:
        hour, minute = int(match.group(1)), int(match.group(2))
        if hour < 24 and minute < 60:
            return hour, minute
    raise ImproperlyConfigured(
        f"NOVELSITE_NIGHTLY_AT={value!r} is not a time of day: use HH:MM on a 24-hour clock "
        "(00:00 to 23:59), in TIME_ZONE; e.g. NOVELSITE_NIGHTLY_AT=02:00"
    )


def nightly_crontab(value: str) -> crontab:
    """The beat schedule of the nightly batches; crontab runs in the app's timezone
    (``CELERY_TIMEZONE``, which is ``TIME_ZONE``)."""
    hour, minute = nightly_at_parse(value)
    return crontab(hour=hour, minute=minute)
