"""The shared HTTP client: polite, size-capped fetching behind an SSRF guard on the connected address."""
