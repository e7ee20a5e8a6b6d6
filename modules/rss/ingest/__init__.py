"""Intake: poll a feed, diff parsed entries against stored ones, run processors, write, publish."""
