"""Evaluation: benchmarks of retrieval and reranking quality against their baselines."""
