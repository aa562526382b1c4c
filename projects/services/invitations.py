"""Inviting people to a project: an existing account by user name or e-mail, or a new account whose
owner gets a one-time link to set its password (or, where e-mail is configured, the link is sent).

Only a project's owners reach these functions (the web view and the API check ``Action.MANAGE``
before anything is looked up), so they may say whether an account exists: nobody else learns it.
The link is Django's own password-reset token (``default_token_generator``): it expires after
``PASSWORD_RESET_TIMEOUT`` and stops working once a password is set, because the token hashes the
account's password (still unusable until then) and last login.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from django.utils.translation import gettext as _

from projects.errors import InvalidData
from projects.models import Membership, Project, Role
from projects.services.projects import membership_set_role

logger = logging.getLogger(__name__)


# Both keep InvalidData's API code ("invalid", with the field in extra.fields), as before.
class NoSuchUser(InvalidData):
    """No active account has this user name or e-mail."""


class AccountExists(InvalidData):
    """An account with this user name or e-mail already exists; invite it instead."""


@dataclass(frozen=True)
class NewMember:
    """A new account, its membership, and how the person gets in: ``emailed`` or a ``link`` to
    hand over (also given when the e-mail could not be sent, with ``email_error``)."""

    membership: Membership
    link: str
    emailed: bool
    email_error: str = ""


def _field_error(field: str, message: str, error: type[InvalidData] = InvalidData) -> InvalidData:
    return error(message, extra={"fields": {field: [message]}})


def _role_checked(role: str) -> str:
    if role not in Role.values:
        raise _field_error("role", _("Choose one of the roles: owner, editor, reviewer, viewer."))
    return role


def user_for_invite(*, identifier: str) -> AbstractBaseUser:
    """The active account whose user name is ``identifier``, else whose e-mail it is (one account
    only: an e-mail shared by several accounts must be told apart by user name)."""
    users = get_user_model().objects.filter(is_active=True)
    identifier = identifier.strip()
    user = users.filter(username=identifier).first()
    if user is None and "@" in identifier:
        matches = list(users.filter(email__iexact=identifier)[:2])
        if len(matches) > 1:
            raise _field_error("username", _("Several accounts use this e-mail; invite by user name."), NoSuchUser)
        user = matches[0] if matches else None
    if user is None:
        raise _field_error("username", _("No account has this user name or e-mail."), NoSuchUser)
    return user


def member_invite(*, project: Project, identifier: str, role: str) -> Membership:
    """Add an existing account (by user name or e-mail) with ``role``, or change the role of a
    member. Takes the project lock (``membership_set_role``)."""
    _role_checked(role)
    return membership_set_role(project=project, user=user_for_invite(identifier=identifier), role=role)


def email_is_configured() -> bool:
    return bool(getattr(settings, "NOVELSITE_EMAIL_CONFIGURED", False))


def password_set_link(*, user: AbstractBaseUser, site_url: str) -> str:
    """An absolute one-time link to Django's ``PasswordResetConfirmView`` for ``user``."""
    path = reverse("password-set", kwargs={"uidb64": urlsafe_base64_encode(force_bytes(user.pk)),
                                           "token": default_token_generator.make_token(user)})
    return site_url.rstrip("/") + path


@transaction.atomic
def member_account_create(*, project: Project, username: str, email: str, role: str) -> Membership:
    """A new account without a usable password, member of ``project`` with ``role``. Refused when
    the user name or the e-mail is taken (both compared case-insensitively)."""
    _role_checked(role)
    User = get_user_model()
    username, email = username.strip(), email.strip()
    try:
        User.username_validator(username)
    except ValidationError as exc:
        raise _field_error("username", " ".join(exc.messages)) from None
    try:
        validate_email(email)
    except ValidationError:
        raise _field_error("email", _("Enter a valid e-mail address.")) from None
    if User.objects.filter(username__iexact=username).exists():
        raise _field_error("username", _("An account with this user name already exists; invite it instead."),
                           AccountExists)
    if User.objects.filter(email__iexact=email).exists():
        raise _field_error("email", _("An account with this e-mail already exists; invite it instead."),
                           AccountExists)
    user = User(username=username, email=email)
    user.set_unusable_password()  # the person chooses it through the link
    try:
        with transaction.atomic():  # two owners creating the same name at once: the second is told
            user.save()
    except IntegrityError:
        raise _field_error("username", _("An account with this user name already exists; invite it instead."),
                           AccountExists) from None
    return membership_set_role(project=project, user=user, role=role)


def member_invitation_send(*, membership: Membership, inviter: AbstractBaseUser, link: str) -> None:
    """E-mail the one-time link to the new member, in the inviter's current language."""
    user, project = membership.user, membership.project
    days = max(1, settings.PASSWORD_RESET_TIMEOUT // 86400)
    subject = _("You are invited to “%(project)s”") % {"project": project.title}
    values = {"inviter": inviter.get_username(), "project": project.title, "role": Role(membership.role).label,
              "username": user.get_username(), "days": days, "link": link}
    body = "\n".join([  # one message per line: the catalogues keep no line breaks inside a message
        _("%(inviter)s invited you to the novel “%(project)s” on Novelsite as %(role)s.") % values, "",
        _("Your user name: %(username)s") % values,
        _("Choose your password here (the link works once, for %(days)d days):") % values, link, ""])
    send_mail(settings.EMAIL_SUBJECT_PREFIX + subject, body, None, [user.email])


def member_account_invite(*, project: Project, inviter: AbstractBaseUser, username: str, email: str, role: str,
                          site_url: str) -> NewMember:
    """Create the account (one transaction), then, where e-mail is configured, send the link after
    the commit, so a slow or failing mail server never holds the project lock. A failed send falls
    back to showing the link."""
    membership = member_account_create(project=project, username=username, email=email, role=role)
    link = password_set_link(user=membership.user, site_url=site_url)
    if not email_is_configured():
        return NewMember(membership=membership, link=link, emailed=False)
    try:
        member_invitation_send(membership=membership, inviter=inviter, link=link)
    except Exception as exc:  # SMTP refused, timed out …: the owner still has a way to let them in
        logger.warning("invitation e-mail to %s failed: %r", membership.user.pk, exc)
        return NewMember(membership=membership, link=link, emailed=False, email_error=str(exc) or repr(exc))
    return NewMember(membership=membership, link="", emailed=True)
