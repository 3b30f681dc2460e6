"""The `chateval` command line."""
