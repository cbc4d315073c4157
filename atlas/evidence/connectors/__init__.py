"""One connector per open source, all behind `Connector` (base.py) and the shared HTTP client (http.py)."""
