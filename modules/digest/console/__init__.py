"""The digest module's web console pages (digests), mounted under /digest."""
