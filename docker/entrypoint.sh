#!/usr/bin/env bash
# Container entrypoint for every Novelsite role.
# RUN_MIGRATIONS=1 (set for the web service only) applies migrations before the command starts;
# then the command replaces this shell, so it receives the container's stop signal directly.
set -euo pipefail

cd /app

if [[ "${RUN_MIGRATIONS:-0}" == "1" ]]; then
    echo "novelsite-entrypoint: applying database migrations" >&2
    python manage.py migrate --noinput
fi

if [[ $# -eq 0 ]]; then
    echo "novelsite-entrypoint: no command given" >&2
    exit 64
fi

exec "$@"
