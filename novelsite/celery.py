"""The Celery app. Configuration comes from Django settings under the ``CELERY_`` namespace.

Celery silently ignores a setting it does not know, so a misspelled ``CELERY_TASK_ACKS_LATE``
would quietly turn off crash safety. ``unknown_celery_settings`` (novelsite/celery_settings.py)
lists such names; the app refuses to configure itself while any exists, and ``manage.py check``
reports them too.
"""
import os

from celery import Celery, signals

from novelsite.celery_settings import unknown_celery_settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "novelsite.settings")


class NovelsiteCelery(Celery):
    def prepare_config(self, c):
        # The check runs here rather than in an ``on_configure`` signal handler: Celery's
        # ``Signal.send`` catches a receiver's exception and only logs it, so the app (and a worker)
        # would have configured itself anyway.
        _refuse_unknown_settings()
        return super().prepare_config(c)


app = NovelsiteCelery("novelsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

def _refuse_unknown_settings() -> None:
    unknown = unknown_celery_settings()
    if unknown:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(
            f"Unknown Celery setting(s): {', '.join(unknown)}. "
            "Check the spelling against https://docs.celeryq.dev/en/stable/userguide/configuration.html"
        )


@signals.worker_init.connect
def _refuse_bad_llm_configuration(sender=None, **kwargs) -> None:
    """A worker with a wrong LLM configuration would take tasks and fail each one later with a
    traceback (leaving projects in ERROR_RETRY): it refuses to start instead, saying what to fix.
    SystemExit, not an exception: Celery's ``Signal.send`` catches and only logs those."""
    import sys

    import django
    from django.apps import apps

    if not apps.ready:
        django.setup()
    from novelsite.checks import llm_configuration_problems

    site, projects = llm_configuration_problems()
    if site or projects:
        lines = "\n".join(f"  - {problem}" for problem in site + projects)
        sys.stderr.write(f"The worker will not start: the LLM configuration is wrong.\n{lines}\n"
                         "Fix it and run `python manage.py check`.\n")
        sys.stderr.flush()
        raise SystemExit(1)


@signals.task_prerun.connect
def _drop_unusable_db_connections(sender=None, **kwargs) -> None:
    """With CELERY_DB_REUSE_MAX a worker keeps its connection across tasks; like a web request,
    a task first drops a connection that is past CONN_MAX_AGE or broken (CONN_HEALTH_CHECKS).
    Not in eager mode: the caller's transaction is still open there."""
    if sender is not None and getattr(sender.request, "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()
