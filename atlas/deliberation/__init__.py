"""Deliberation (DEL-1…8): plan the panel, let each persona write tagged claims from its retrieved
passages, audit every SOURCED tag, retry once where validation failed, synthesise from the
post-audit round only, and render the brief. Plain logic: engines, verifiers and the database's
verbatim check are passed in."""
