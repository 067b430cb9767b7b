"""Hybrid retrieval: lexical and dense in parallel, fused by reciprocal rank fusion."""
