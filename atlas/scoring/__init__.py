"""Resolution, Brier scoring, skill, Murphy decomposition, reliability diagram and the Accuracy report.

SCORING_VERSION names the resolution + scoring rules; change it whenever they change, so old scores
stay attributable to the rules that produced them (sql/020_forecasts.sql's state view names it too).
"""

SCORING_VERSION = "brier-v1"

# The name of the final state (type COMPLETED: its scores stand) of a nightly run whose fetch failed, so due
# forecasts wait for data; the UI shows it, and its event (prefect.flow-run.Degraded) fires the nightly alert.
DEGRADED = "Degraded"
