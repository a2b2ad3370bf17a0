"""Analyses of `proxy-tasks`."""
