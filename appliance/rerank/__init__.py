"""Reranking after fusion, one contract for every stage (``base.RerankStage``).

``stages.open_stages`` builds them, in order, as the settings say. The stages:
``cross_encoder_stage`` (the registry's cross-encoder, ``cross_encoder``) and
``cage_stage`` (CAGE: ``cage`` scores, ``relational_layer`` and ``diversity_training``
are its internals), ``chain_stage`` and ``graph_evidence_stage`` (the knowledge
graph's first passage kept at its fused place or above). The research methods compared
with them live in ``benchmarks/rerank_bench``.
"""
