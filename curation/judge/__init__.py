"""Judging: assigning pairs to judges (overlap set first), serving them, recording labels."""
