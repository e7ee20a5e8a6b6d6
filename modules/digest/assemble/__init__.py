"""Digest assembly (seed 002 step 6), pure: sections, sizing, summaries, self-checks, rendering."""
