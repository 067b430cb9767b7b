"""Graph construction on hand-checked sentences (en_core_web_md's parse)."""

import numpy as np

from appliance.nlp.neural_coreference import referents_from_clusters
from appliance.nlp.parse_graph import (
    ENTITY_TYPES,
    GRAPH_VERSION,
    RELATIONS,
    UPOS,
    NoResolution,
    ParseGraphBuilder,
    PassageGraph,
)


def edges(graph: PassageGraph) -> set[tuple[str, str, str, str]]:
    return {
        (graph.lemmas[s], graph.lemmas[t], RELATIONS[r], label)
        for (s, t), r, label in zip(graph.edges, graph.edge_types, graph.edge_labels, strict=True)
    }


def test_subject_object_edge_is_labelled_by_the_verb(graph_builder) -> None:
    graph = graph_builder.build("Aspirin reduces the risk of stroke.")
    assert ("aspirin", "risk", "subject_object", "reduce") in edges(graph)
    assert ("risk", "stroke", "prep_other", "of") in edges(graph)


def test_negation_is_its_own_relation(graph_builder) -> None:
    found = edges(graph_builder.build("The nurse did not give the morphine."))
    assert ("nurse", "morphine", "subject_object_negated", "give") in found
    assert not any(relation == "subject_object" for _s, _t, relation, _l in found)


def test_numbers_link_to_what_they_count(graph_builder) -> None:
    found = edges(graph_builder.build("Give 5 tablets every day."))
    assert ("5", "tablet", "numeric", "") in found


def test_modifiers_appositions_and_prepositions(graph_builder) -> None:
    found = edges(
        graph_builder.build("Aspirin, an antiplatelet drug, was stopped after surgery in London.")
    )
    assert ("antiplatelet", "drug", "modifier", "") in found
    assert ("aspirin", "drug", "apposition", "") in found
    assert any(r == "prep_temporal" and t == "surgery" for _s, t, r, _l in found)
    assert any(r == "prep_spatial" and t == "london" for _s, t, r, _l in found)


def test_entities_of_one_sentence_cooccur_both_ways(graph_builder) -> None:
    found = edges(graph_builder.build("Marie Curie worked in Paris with Pierre Curie."))
    assert ("curie", "paris", "entity_cooccurrence", "") in found
    assert ("paris", "curie", "entity_cooccurrence", "") in found


def test_pronouns_resolve_to_their_referent(graph_builder) -> None:
    graph = graph_builder.build("The drug was stopped after 3 days because it caused a rash.")
    assert ("drug", "rash", "subject_object", "cause") in edges(graph)
    assert "it" not in graph.lemmas


def test_nodes_are_unique_lemmas_with_features(graph_builder) -> None:
    graph = graph_builder.build("Patients take tablets. The patient took a tablet in Paris.")
    assert graph.lemmas.count("patient") == 1 and graph.lemmas.count("tablet") == 1
    paris = graph.lemmas.index("paris")
    assert ENTITY_TYPES[graph.entity[paris]] == "GPE"
    assert UPOS[graph.pos[paris]] == "PROPN"
    norms = np.linalg.norm(graph.vectors.astype(np.float32), axis=1)
    assert graph.vectors.shape == (graph.num_nodes, 300)
    assert np.allclose(norms[norms > 0], 1.0, atol=1e-2)


def test_graphs_round_trip_through_bytes(graph_builder) -> None:
    graph = graph_builder.build("Metformin lowers glucose in type 2 diabetes.")
    again = PassageGraph.from_bytes(graph.to_bytes())
    assert again.lemmas == graph.lemmas and again.edge_labels == graph.edge_labels
    assert np.array_equal(again.edges, graph.edges) and np.array_equal(again.vectors, graph.vectors)


def test_without_resolution_pronoun_edges_are_lost(spacy_pipeline, graph_builder) -> None:
    text = "The drug was stopped after 3 days because it caused a rash."
    plain = ParseGraphBuilder(spacy_pipeline, NoResolution())
    assert ("drug", "rash", "subject_object", "cause") not in edges(plain.build(text))
    assert ("drug", "rash", "subject_object", "cause") in edges(graph_builder.build(text))
    # Another resolver makes other graphs, so ingestion fingerprints must change with it;
    # the default keeps the bare version, so upgrading rebuilds nothing.
    assert graph_builder.signature == GRAPH_VERSION
    assert plain.signature == f"{GRAPH_VERSION}+none"


class _ClusterResolver:
    """Resolves from fixed coreference clusters, in the form F-coref returns them."""

    name = "fixed clusters"

    def __init__(self, clusters: list[list[tuple[int, int]]]) -> None:
        self._clusters = clusters

    def resolve(self, doc):  # type: ignore[no-untyped-def]
        return referents_from_clusters(doc, self._clusters)


def test_coreference_clusters_resolve_pronouns_to_their_named_mention(spacy_pipeline) -> None:
    text = "The nurse checked the pump. She called the pharmacist because it had failed."

    def mention(word: str, after: int = 0) -> tuple[int, int]:
        start = text.index(word, after)
        return start, start + len(word)

    nurse, pump, she = mention("nurse"), mention("pump"), mention("She")
    it = mention("it", text.index("because"))
    doc = spacy_pipeline(text)
    referents = referents_from_clusters(doc, [[nurse, she], [pump, it]])
    assert {doc[i].text: r.text for i, r in referents.items()} == {"She": "nurse", "it": "pump"}
    # A cluster with no named mention resolves nothing.
    assert referents_from_clusters(doc, [[she, it]]) == {}
    resolved = ParseGraphBuilder(spacy_pipeline, _ClusterResolver([[nurse, she], [pump, it]]))
    found = edges(resolved.build(text))
    assert ("nurse", "pharmacist", "subject_object", "call") in found
    assert ("pump", "fail", "subject_object", "fail") in found
    unresolved = edges(ParseGraphBuilder(spacy_pipeline, NoResolution()).build(text))
    assert unresolved == {("nurse", "pump", "subject_object", "check")}
