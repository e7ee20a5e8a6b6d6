"""Layered deduplication (seed 002 step 3), cheapest layer first; every decision is a pure function."""
