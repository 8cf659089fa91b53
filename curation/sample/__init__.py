"""Sampling queries from search logs: read, normalise, collapse, stratify, allocate, draw."""
