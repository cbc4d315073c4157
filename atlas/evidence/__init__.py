"""Evidence base (EVB-1…4): open-source connectors, typed per-source outcomes, a deterministic ranker,
the licence guard, the retraction gate and de-identification of every outbound query."""
