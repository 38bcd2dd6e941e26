"""The `lodestar` command: `main.py` parses and dispatches; one module per group of commands."""
