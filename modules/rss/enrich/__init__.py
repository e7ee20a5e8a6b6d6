"""Enrichment after intake: embeddings, full-text articles, per-feed context summaries."""
