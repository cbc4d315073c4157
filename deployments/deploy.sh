#!/usr/bin/env bash
# Deploy every flow in prefect.yaml to the Prefect server at $PREFECT_API_URL, then start a worker:
#   PREFECT_API_URL=http://127.0.0.1:4200/api deployments/deploy.sh && prefect worker start --pool atlas-process
# Idempotent: the work pool and blocks are created once, deployments are updated in place, and the
# binding lane keeps the state (paused or active) it had before.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${PREFECT_API_URL:?set PREFECT_API_URL to your Prefect server, e.g. http://127.0.0.1:4200/api}"
export ATLAS_PROJECT_DIR="${ATLAS_PROJECT_DIR:-$PWD}"   # where workers run the flows from
prefect work-pool inspect atlas-process >/dev/null 2>&1 || prefect work-pool create atlas-process --type process
for module in forum_atlas.blocks.database forum_atlas.blocks.providers; do prefect block register -m "$module"; done
# prefect.yaml ships the lane paused (FC-5); a redeploy must not undo an operator's `atlas lane resume`.
lane_was=$(atlas lane status --state 2>/dev/null || echo absent)
prefect --no-prompt deploy --all
if [ "$lane_was" = "active" ]; then atlas lane resume; fi
