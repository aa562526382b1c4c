from django.db import models


class EditVersioned(models.Model):
    """A row people edit. ``version`` goes up on every save, so a save that started from an
    older version can be refused instead of silently overwriting (``projects.services.editing``)."""

    version = models.PositiveIntegerField(default=1, editable=False)

    class Meta:
        abstract = True


class CanonStatus(models.TextChoices):  # facts §10.1, §10.2
    ESTABLISHED = "established"
    PLANNED = "planned"
    DEPRECATED = "deprecated"
