"""Language models used at ingestion and query time (embeddings; parse graphs later)."""
