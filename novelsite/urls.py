from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from novelsite.login_throttle import ThrottledAdminAuthenticationForm, ThrottledAuthenticationForm
from novelsite.views import favicon, healthz

admin.site.login_form = ThrottledAdminAuthenticationForm  # failed sign-ins are counted and locked out

# /api/ answers in its JSON error shape, the web pages with Django's error pages (never a traceback)
handler400 = "novelsite.error_views.bad_request"
handler404 = "novelsite.error_views.page_not_found"
handler500 = "novelsite.error_views.server_error"

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    # browsers ask for /favicon.ico on every page, the admin's included
    path("favicon.ico", favicon),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # Swagger UI from drf-spectacular-sidecar's static files; the split view serves its start-up
    # script as a file, so the CSP needs no inline script.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/", include("projects.api.urls")),
    path("api/", include("pipeline.web.api_urls")),
    path("api/", include("pipeline.promotion.urls")),
    # web pages (templates/): log in and out, the language switch, story pages, pipeline pages
    path("login/", auth_views.LoginView.as_view(authentication_form=ThrottledAuthenticationForm), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # the one-time link a new member gets (projects/services/invitations.py): Django's own
    # password-reset token and views, so the link expires and works once
    path("welcome/<uidb64>/<token>/", auth_views.PasswordResetConfirmView.as_view(
        template_name="registration/password_set_confirm.html", success_url="/welcome/done/"),
        name="password-set"),
    path("welcome/done/", auth_views.PasswordResetCompleteView.as_view(
        template_name="registration/password_set_complete.html"), name="password-set-done"),
    path("i18n/", include("django.conf.urls.i18n")),
    path("", include("projects.urls")),
    path("", include("pipeline.web.urls")),
]
