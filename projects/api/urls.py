from django.urls import path

from projects.api.filetree import ProjectExportApi, ProjectImportApi

urlpatterns = [
    path("projects/import", ProjectImportApi.as_view(), name="project-import"),
    path("projects/<slug:slug>/export.zip", ProjectExportApi.as_view(), name="project-export"),
]
