"""Pooling candidate runs into one blind, shuffled, de-duplicated set of pairs."""
