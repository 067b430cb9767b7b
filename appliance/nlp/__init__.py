"""Language models used at ingestion and query time: embeddings, dependency parse graphs
(for CAGE), coreference, and the encoder fine-tuning the reranker training uses."""
