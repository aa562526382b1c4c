from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class PipelineConfig(AppConfig):
    name = "pipeline"
    verbose_name = _("Pipeline")

    def ready(self) -> None:
        # projects never imports pipeline: the exporter learns about staging/ through this hook
        from pipeline.steps.staging_export import staging_files_of
        from projects.filetree.hooks import register_staging_writer

        register_staging_writer(staging_files_of)
        # an imported tree's in-flight chapter becomes its run, waiting at the tool's next step (#20 item 3)
        from pipeline.steps.staged_resume import staged_chapter_read
        from projects.filetree.hooks import register_staging_reader

        register_staging_reader(staged_chapter_read)
        from pipeline.promotion.snapshot import promotions_import, promotions_of
        from projects.filetree.hooks import register_extension

        register_extension("promotions/", writer=promotions_of, reader=promotions_import)
        # the craft lints' findings, highlighted on the chapter page (projects.chapter_marks)
        from pipeline.chapter.lint import chapter_lint_marks
        from projects.chapter_marks import register_chapter_marker

        register_chapter_marker(chapter_lint_marks)
        # the pipeline's codes in human words, for the web pages (projects.labels)
        from pipeline.web.labels import register_pipeline_labels

        register_pipeline_labels()
        # the NOVEL_ASK answer handlers of each step kind register themselves on import
        import pipeline.chapter.pause  # noqa: F401
        import pipeline.runtime.registry  # noqa: F401  (quick start, planning and review steps)
        # Celery's registry knows the tasks before anything sends one: the runtime finds them by
        # name (pipeline.runtime.queueing.task_named) instead of importing the tasks module back
        import pipeline.tasks  # noqa: F401
