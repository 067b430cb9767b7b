"""Which rerank stages run, in which order, as the settings say: the cross-encoder when
enabled and a model fills its role, then CAGE, then the title-and-entity chain, and with
the knowledge graph, the floor under its first passage. The query path and the rerank
benchmark's "product pipeline" row both build them here."""

from __future__ import annotations

from appliance.model_registry import ModelRegistry
from appliance.rerank.base import RerankStage
from appliance.rerank.cage import CageConfig, CageReranker
from appliance.rerank.cage_stage import CageStage, StoredGraphs, StoredVectors
from appliance.rerank.chain_stage import ChainStage
from appliance.rerank.cross_encoder import CrossEncoderReranker
from appliance.rerank.cross_encoder_stage import CrossEncoderStage
from appliance.rerank.graph_evidence_stage import GraphEvidenceStage
from appliance.settings import RerankSettings


def open_stages(
    settings: RerankSettings,
    registry: ModelRegistry,
    graphs: StoredGraphs,
    vectors: StoredVectors,
    knowledge_graph: bool = False,
) -> list[RerankStage]:
    stages: list[RerankStage] = []
    role = settings.cross_encoder_role
    if settings.cross_encoder and registry.has(role):
        manifest = registry.manifest(role)
        reranker = CrossEncoderReranker(registry.load(role), manifest.threshold)
        stages.append(CrossEncoderStage(reranker, settings.cross_encoder_candidates, manifest.name))
    if settings.cage:
        config = CageConfig(
            alpha=settings.cage_alpha, epochs=settings.cage_epochs, seed=settings.cage_seed
        )
        stages.append(CageStage(graphs, vectors, CageReranker(config), settings.cage_candidates))
    if settings.chain:
        stages.append(ChainStage(settings.chain_candidates, settings.chain_weight))
    if knowledge_graph and settings.graph_evidence:
        stages.append(GraphEvidenceStage())
    return stages
