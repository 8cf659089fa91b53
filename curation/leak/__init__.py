"""Leak check: golden queries whose text appears in the corpus, and the lead's review of findings."""
