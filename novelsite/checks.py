"""System checks for the runtime settings, so ``manage.py check`` (and every server start)
catches what would otherwise fail quietly under load."""
from django.conf import settings
from django.core.checks import Error, Tags, register


@register(Tags.compatibility)
def celery_settings_check(app_configs=None, **kwargs) -> list[Error]:
    from novelsite.celery_settings import unknown_celery_settings

    errors = [
        Error(f"Unknown Celery setting {name}: Celery would ignore it.", id="novelsite.E001")
        for name in unknown_celery_settings(settings)
    ]
    visibility = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("visibility_timeout", 3600)
    longest = settings.CELERY_TASK_TIME_LIMIT + settings.NOVELSITE_MAX_RETRY_COUNTDOWN
    if visibility <= longest:
        errors.append(
            Error(
                f"Redis visibility_timeout ({visibility}s) must exceed the hard time limit plus the longest "
                f"retry countdown ({longest}s), or a running stage is handed to a second worker.",
                id="novelsite.E002",
            )
        )
    # a backoff of 0 turns Celery's backoff off: a failed stage would be retried after Celery's fixed 3 minutes
    for name in ("NOVELSITE_LEASE_SECONDS", "NOVELSITE_RECONCILE_SECONDS", "NOVELSITE_STAGE_RETRY_BACKOFF"):
        if getattr(settings, name) < 1:
            errors.append(Error(f"{name} must be at least 1 second.", id="novelsite.E004"))
    errors += _spending_rate_errors()
    if settings.NOVELSITE_BATCH_CACHE_TTL not in ("5m", "1h"):
        errors.append(Error(f"NOVELSITE_BATCH_CACHE_TTL must be 5m or 1h, not {settings.NOVELSITE_BATCH_CACHE_TTL!r}.",
                            id="novelsite.E005"))
    if settings.CELERY_TASK_SOFT_TIME_LIMIT >= settings.CELERY_TASK_TIME_LIMIT:
        errors.append(Error("CELERY_TASK_SOFT_TIME_LIMIT must be below CELERY_TASK_TIME_LIMIT.", id="novelsite.E003"))
    return errors


def _spending_rate_errors() -> list[Error]:
    from pipeline.nightly.spending import Rate

    errors = []
    for key, variable in (("user_rate", "NOVELSITE_LLM_RATE_PER_USER"),
                          ("project_rate", "NOVELSITE_LLM_RATE_PER_PROJECT")):
        try:
            Rate.parse(settings.NOVELSITE_SPENDING[key])
        except ValueError as exc:
            errors.append(Error(f"{variable}: {exc}.", id="novelsite.E006"))
    return errors


@register(Tags.compatibility)
def llm_configuration_check(app_configs=None, **kwargs) -> list[Error]:
    """The LLM providers (novelsite/llm_providers.py): an unknown backend or provider, a malformed
    table, a provider whose key variable is unset, a project whose stage model names a provider
    that does not exist. The worker runs the same check before it starts (novelsite/celery.py)."""
    site, projects = llm_configuration_problems()
    return ([Error(problem, id="novelsite.E010") for problem in site]
            + [Error(problem, id="novelsite.E011") for problem in projects])


def llm_configuration_problems() -> tuple[list[str], list[str]]:
    """(site problems, project problems) in English; the projects are skipped while the database
    cannot be read (not migrated yet, or no database in this process)."""
    from django.db import DatabaseError
    from django.utils import translation

    from novelsite.llm_providers import projects_problems, site_problems

    with translation.override("en"):
        site = site_problems()
        try:
            projects = projects_problems()
        except (DatabaseError, RuntimeError):  # RuntimeError: a test that forbids the database
            projects = []
    return site, projects
