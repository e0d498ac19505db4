"""Routes under /v1 owned by the schedules app."""

from django.urls import path

from schedules.apis import (
    FireListApi,
    ScheduleContextApi,
    ScheduleDetailApi,
    ScheduleListApi,
    ScheduleRunApi,
    ScheduleUsageApi,
)

urlpatterns = [
    path("schedules", ScheduleListApi.as_view(), name="schedules"),
    path("schedules/<str:schedule_id>", ScheduleDetailApi.as_view(), name="schedule"),
    path("schedules/<str:schedule_id>/run", ScheduleRunApi.as_view(), name="schedule-run"),
    path("schedules/<str:schedule_id>/fires", FireListApi.as_view(), name="schedule-fires"),
    path("schedules/<str:schedule_id>/context", ScheduleContextApi.as_view(),
         name="schedule-context"),
    path("schedules/<str:schedule_id>/usage", ScheduleUsageApi.as_view(), name="schedule-usage"),
]
