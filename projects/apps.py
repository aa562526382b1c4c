from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ProjectsConfig(AppConfig):
    name = "projects"
    verbose_name = _("Novels")

    def ready(self) -> None:
        from novelsite import checks  # noqa: F401  (registers the system checks)
