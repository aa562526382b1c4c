from django.urls import path

from pipeline.promotion.api import ProjectPromotionDetailApi, ProjectPromotionListApi, ProjectPromotionRegenerateApi

urlpatterns = [
    path("projects/<slug:slug>/promotions", ProjectPromotionListApi.as_view(), name="project-promotions"),
    path("projects/<slug:slug>/promotions/<int:run_id>", ProjectPromotionDetailApi.as_view(),
         name="project-promotion"),
    path("projects/<slug:slug>/promotions/<int:run_id>/regenerate", ProjectPromotionRegenerateApi.as_view(),
         name="project-promotion-regenerate"),
]
