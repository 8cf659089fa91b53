"""Helpers shared by the tests: data builders, a test client, a browser."""
