"""Language models used at ingestion and query time: embeddings, dependency parse graphs
(for CAGE), coreference, and the pair-classifier loader the cross-encoder and the NLI
verifier share."""
