#!/usr/bin/env bash
# Deploy every flow in prefect.yaml to the Prefect server at $PREFECT_API_URL, then start a worker:
#   PREFECT_API_URL=http://127.0.0.1:4200/api deployments/deploy.sh && prefect worker start --pool atlas-process
# Idempotent: the work pool and block types are created once, deployments are updated in place, every
# schedule of a deployment the server already has stays as the operator left it — prefect.yaml's
# initial_schedules only seed new deployments — and the automation that alerts when a deployment's run fails,
# crashes or (the nightly) ends Degraded is declared (through $ATLAS_ALERT_WEBHOOK_URL, or a saved Custom Webhook
# block named atlas-nightly-alert), with the crash detection.
# `atlas ops deploy` does it all in one process (plus `prefect --no-prompt deploy --all`).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${PREFECT_API_URL:?set PREFECT_API_URL to your Prefect server, e.g. http://127.0.0.1:4200/api}"
export ATLAS_PROJECT_DIR="${ATLAS_PROJECT_DIR:-$PWD}"   # where workers run the flows from
exec atlas ops deploy
