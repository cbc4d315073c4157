"""Resolution, Brier scoring, skill, Murphy decomposition, reliability diagram and the Accuracy report.

SCORING_VERSION names the resolution + scoring rules; change it whenever they change, so old scores
stay attributable to the rules that produced them (sql/020_forecasts.sql's state view names it too).
"""

SCORING_VERSION = "brier-v1"
