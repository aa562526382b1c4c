from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class PipelineConfig(AppConfig):
    name = "pipeline"
    verbose_name = _("Pipeline")
