"""Package data: the demo sample (`sample/`), the bundled FRED vintages (`series/`) and the
binding lane's question file (`forecast_lane.json`). Read with importlib.resources."""
