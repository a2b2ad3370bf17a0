"""Analyses of `downstream-predictability`."""
