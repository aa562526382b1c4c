"""Sign-in throttling: too many failed passwords for one account, or from one address, and that
account or address is refused for a while, whatever password it tries next. The web login
(``/login/``) and the admin's login use the forms below; the API has no password login (it takes
tokens made in the admin or with ``drf_create_token``, and the web session).

Counters live in Django's cache (``CACHES``: per process by default, shared across processes with
``CACHE_URL``). A failure counts for ``NOVELSITE_LOGIN_FAILURE_WINDOW`` seconds; reaching
``NOVELSITE_LOGIN_MAX_FAILURES_PER_ACCOUNT`` (per user name) or ``..._PER_ADDRESS`` (per client
address, ``client_address``) locks for ``NOVELSITE_LOGIN_LOCKOUT_SECONDS``. A successful sign-in clears
its account's counter and lock, not the address's: one good account does not unlock guessing others.
"""
from __future__ import annotations

import hashlib
import math
import time

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache
from django.http import HttpRequest
from django.utils.translation import ngettext


def client_address(request: HttpRequest) -> str:
    """The client's address: ``REMOTE_ADDR``, or, behind ``NOVELSITE_PROXY_HOPS`` proxies that each
    append the address they saw to X-Forwarded-For, the one the outermost proxy saw (counted from
    the right: what a client writes in the header itself stays to the left of it). A request with
    fewer entries than proxies did not come through them all: its own ``REMOTE_ADDR`` counts."""
    remote = request.META.get("REMOTE_ADDR", "")
    hops = getattr(settings, "NOVELSITE_PROXY_HOPS", 0)
    if hops <= 0:
        return remote
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    return forwarded[-hops] if len(forwarded) >= hops else remote


def _limit(name: str, default: int) -> int:
    return int(getattr(settings, name, default))


def _keys(kind: str, value: str) -> tuple[str, str]:
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"login-failures:{kind}:{digest}", f"login-locked:{kind}:{digest}"


def _subjects(request: HttpRequest | None, username: str) -> list[tuple[str, str, int]]:
    subjects = [("account", username.strip().casefold(),
                 _limit("NOVELSITE_LOGIN_MAX_FAILURES_PER_ACCOUNT", 5))]
    address = client_address(request) if request is not None else ""
    if address:
        subjects.append(("address", address, _limit("NOVELSITE_LOGIN_MAX_FAILURES_PER_ADDRESS", 20)))
    return subjects


def login_locked_for(request: HttpRequest | None, username: str) -> int:
    """Seconds until this account and address may try again; 0 when they may now."""
    now = time.time()
    until = [cache.get(_keys(kind, value)[1]) or 0 for kind, value, _max in _subjects(request, username)]
    return max(0, math.ceil(max(until) - now))


def login_failed(request: HttpRequest | None, username: str) -> None:
    window = _limit("NOVELSITE_LOGIN_FAILURE_WINDOW", 15 * 60)
    lockout = _limit("NOVELSITE_LOGIN_LOCKOUT_SECONDS", 15 * 60)
    for kind, value, most in _subjects(request, username):
        failures_key, locked_key = _keys(kind, value)
        cache.add(failures_key, 0, timeout=window)
        try:
            failures = cache.incr(failures_key)
        except ValueError:  # expired between add and incr
            failures = 1
            cache.set(failures_key, failures, timeout=window)
        if failures >= most:
            cache.set(locked_key, time.time() + lockout, timeout=lockout)


def login_succeeded(username: str) -> None:
    cache.delete_many(_keys("account", username.strip().casefold()))


def locked_message(seconds: int) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    return ngettext(
        "Too many failed sign-in attempts. Please wait %(minutes)d minute and try again.",
        "Too many failed sign-in attempts. Please wait %(minutes)d minutes and try again.",
        minutes) % {"minutes": minutes}


class ThrottledLoginMixin:
    """For Django's AuthenticationForm and its subclasses: a locked account or address is refused
    before the password is checked (so a right password does not get through a lock either)."""

    throttled_message = ""

    def clean(self):
        username, password = self.cleaned_data.get("username"), self.cleaned_data.get("password")
        if username is None or not password:
            return super().clean()
        locked = login_locked_for(self.request, username)
        if locked:
            self.throttled_message = locked_message(locked)
            raise forms.ValidationError(self.throttled_message, code="throttled")
        try:
            cleaned = super().clean()
        except forms.ValidationError:
            if self.user_cache is None:  # a wrong password, not an inactive account
                login_failed(self.request, username)
            raise
        login_succeeded(username)
        return cleaned


class ThrottledAuthenticationForm(ThrottledLoginMixin, AuthenticationForm):
    pass


class ThrottledAdminAuthenticationForm(ThrottledLoginMixin, AdminAuthenticationForm):
    pass
