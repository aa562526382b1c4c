from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from novelsite.views import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/", include("projects.api.urls")),
    path("api/", include("pipeline.urls")),
]
