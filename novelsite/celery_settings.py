"""Which ``CELERY_*`` settings Celery does not know: it ignores them silently, so a misspelled
``CELERY_TASK_ACKS_LATE`` would quietly turn off crash safety. Read by the Celery app, which refuses
to configure itself, and by ``manage.py check`` (novelsite/checks.py)."""
from celery.app.defaults import NAMESPACES, flatten

# DB_REUSE_MAX is not a Celery option but a setting its Django fixup reads
# (celery/fixups/django.py): how many tasks a worker process runs on one database connection.
_KNOWN_CELERY_KEYS = frozenset(name for name, _option in flatten(NAMESPACES)) | {"db_reuse_max"}


def unknown_celery_settings(settings_obj=None) -> list[str]:
    """Names of ``CELERY_*`` settings that Celery does not recognise."""
    if settings_obj is None:
        from django.conf import settings as settings_obj
    unknown = []
    for name in dir(settings_obj):
        if name.startswith("CELERY_") and name[len("CELERY_"):].lower() not in _KNOWN_CELERY_KEYS:
            unknown.append(name)
    return sorted(unknown)
