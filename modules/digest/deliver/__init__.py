"""Delivery: the schedule decision (pure), digest events (pure) and the build-store-emit job."""
