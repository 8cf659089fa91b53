"""Versioned, immutable qrels exports with their manifest, and query splits."""
