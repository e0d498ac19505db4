"""Schedules: an agent (or one session) sent a message on a cron expression, fired by the
workers' reconciler thread, exactly once per fire time."""
