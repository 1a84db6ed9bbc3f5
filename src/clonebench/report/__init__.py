"""Turning runs into published numbers: paired comparisons, compatibility checks, paper tables, plots."""
