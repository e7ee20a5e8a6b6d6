"""The rss module's web console pages (feeds, feed detail, entries, search), mounted under /rss."""
