"""The `atlas` command line: one module per command group in `cli/commands/`."""
