"""Resolution, scoring (the registered versions in `versions.py`), skill, Murphy decomposition, reliability
diagram and the Accuracy report.

SCORING_VERSION is the default version: the one the states and Accuracy show unless asked for another (the
nightly writes it and every version that has been backfilled).
A change of the resolution or scoring rules is a new version in `versions.py` (and a migration adding its row),
so old scores stay attributable to the rules that produced them.
"""

from forum_atlas.scoring.versions import DEFAULT_VERSION as SCORING_VERSION

# The name of the final state (type COMPLETED: its scores stand) of a nightly run whose fetch failed, so due
# forecasts wait for data; the UI shows it, and its event (prefect.flow-run.Degraded) fires the nightly alert.
DEGRADED = "Degraded"
