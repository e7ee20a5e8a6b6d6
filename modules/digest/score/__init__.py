"""Importance 0–100 (seed 002 step 4), pure."""
