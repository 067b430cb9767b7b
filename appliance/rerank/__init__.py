"""Reranking: the cross-encoder and the CAGE set-level coherence reranker."""
