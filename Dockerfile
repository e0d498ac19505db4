# hango's one image: the web process (the default CMD) and, with another command, the Celery
# worker group (`python -m hango_project.worker_group`: a gevent Celery worker per core, as make
# worker runs it).
# docker-compose.yml runs both against PostgreSQL and Redis.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore \
    HANGO_VAR_DIR=/app/var \
    HANGO_STATIC_ROOT=/app/staticfiles

WORKDIR /app

# The pinned dependencies first, so a code change does not reinstall them.
COPY requirements.txt requirements-nodeps.txt ./
RUN pip install -r requirements.txt \
    && pip install --no-deps --ignore-requires-python -r requirements-nodeps.txt

COPY . .
RUN pip install --no-deps -e sdk/python && pip install --no-deps -e .

# The code stays root-owned and read-only to the process; only local state and the collected
# static files belong to the unprivileged user.
RUN useradd --system --create-home --uid 10001 --user-group hango \
    && mkdir -p "$HANGO_VAR_DIR" "$HANGO_STATIC_ROOT" \
    && chown hango:hango "$HANGO_VAR_DIR" "$HANGO_STATIC_ROOT"
USER hango

# Settings need a secret key to import. This throwaway one is set for this one command only, so
# it is neither kept in the image's environment nor used at run time, where deployments pass
# their own DJANGO_SECRET_KEY.
RUN DJANGO_SECRET_KEY=collectstatic-only-not-a-secret python manage.py collectstatic --noinput

EXPOSE 8000
# As make serve: requests are greenlets (gevent), so an event stream holds no worker while it waits.
CMD ["gunicorn", "hango_project.wsgi", "--bind", "0.0.0.0:8000", "--workers", "2", "--worker-class", "gevent", "--worker-connections", "2000", "--access-logfile", "-"]
