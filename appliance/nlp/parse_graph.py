"""Typed dependency graphs of passages, the input of the CAGE coherence reranker.

Each passage becomes a small directed graph (after "CAGE: Coherence-Aware Graph
Encoding for Retrieval-Augmented Generation"): nodes are the passage's lemmatised
content words (pronouns resolved to their referents), edges carry one of a fixed set
of relation types read off the dependency parse. Graphs are built once, at
ingestion, and stored with the chunk; a query never parses.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

GRAPH_VERSION = "1"
"""Bumped whenever graph construction changes, so ingestion rebuilds stored graphs."""

RELATIONS: tuple[str, ...] = (
    "subject_object",  # subject -> object of one verb; the verb lemma is the edge label
    "subject_object_negated",  # the same, when the verb is negated
    "modifier",  # adjectival, compound, possessive and nominal modifiers -> their head
    "apposition",  # head -> appositive
    "numeric",  # number or quantity -> what it counts or measures
    "prep_spatial",  # head -> object of a spatial preposition
    "prep_temporal",  # head -> object of a temporal preposition
    "prep_other",  # head -> object of any other preposition
    "entity_cooccurrence",  # named entities of one sentence, both directions
)
UPOS: tuple[str, ...] = (
    "ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM",
    "PART", "PRON", "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X",
)  # fmt: skip
ENTITY_TYPES: tuple[str, ...] = (
    "", "CARDINAL", "DATE", "EVENT", "FAC", "GPE", "LANGUAGE", "LAW", "LOC", "MONEY",
    "NORP", "ORDINAL", "ORG", "PERCENT", "PERSON", "PRODUCT", "QUANTITY", "TIME", "WORK_OF_ART",
)  # fmt: skip
CONTENT_POS = {"NOUN", "PROPN", "VERB", "ADJ", "NUM", "ADV"}
SUBJECTS = {"nsubj", "nsubjpass", "csubj", "csubjpass", "expl"}
OBJECTS = {"dobj", "obj", "attr", "oprd", "dative", "acomp", "xcomp", "ccomp"}
MODIFIERS = {"amod", "compound", "poss", "nmod", "npadvmod", "advmod"}
NUMERIC = {"nummod", "quantmod"}
SPATIAL = {
    "in", "on", "at", "near", "above", "below", "under", "inside", "outside", "across", "between",
    "into", "onto", "from", "to", "through", "over", "behind", "beside", "beneath", "along",
    "around",
}  # fmt: skip
TEMPORAL = {"before", "after", "during", "since", "until", "till", "throughout", "within", "past"}
TEMPORAL_ENTITIES = {"DATE", "TIME"}
SPATIAL_ENTITIES = {"GPE", "LOC", "FAC"}
FEATURE_DIM_EXTRA = len(UPOS) + len(ENTITY_TYPES) + 1


@dataclass(frozen=True, slots=True)
class PassageGraph:
    """Nodes (lemma, POS, entity type, word vector) and typed, labelled edges."""

    lemmas: tuple[str, ...]
    pos: np.ndarray  # (n,) int8 index into UPOS
    entity: np.ndarray  # (n,) int8 index into ENTITY_TYPES
    vectors: np.ndarray  # (n, d) float16, L2-normalised (zero when the word has none)
    edges: np.ndarray  # (m, 2) int32 source, target
    edge_types: np.ndarray  # (m,) int8 index into RELATIONS
    edge_labels: tuple[str, ...]  # verb lemma or preposition, "" where none

    @property
    def num_nodes(self) -> int:
        return len(self.lemmas)

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        np.savez_compressed(
            buffer,
            lemmas=np.array(self.lemmas, dtype=object).astype(str),
            pos=self.pos,
            entity=self.entity,
            vectors=self.vectors,
            edges=self.edges,
            edge_types=self.edge_types,
            edge_labels=np.array(self.edge_labels, dtype=object).astype(str),
        )
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, raw: bytes) -> PassageGraph:
        with np.load(io.BytesIO(raw), allow_pickle=False) as data:
            return cls(
                lemmas=tuple(str(x) for x in data["lemmas"]),
                pos=data["pos"],
                entity=data["entity"],
                vectors=data["vectors"],
                edges=data["edges"].reshape(-1, 2),
                edge_types=data["edge_types"],
                edge_labels=tuple(str(x) for x in data["edge_labels"]),
            )


class _Builder:
    def __init__(self, dimension: int) -> None:
        self.index: dict[str, int] = {}
        self.lemmas: list[str] = []
        self.pos: list[int] = []
        self.entity: list[int] = []
        self.vectors: list[np.ndarray] = []
        self.dimension = dimension
        self.edges: dict[tuple[int, int, int], str] = {}

    def node(self, token: Any) -> int:
        lemma = token.lemma_.lower().strip()
        if lemma not in self.index:
            self.index[lemma] = len(self.lemmas)
            self.lemmas.append(lemma)
            self.pos.append(UPOS.index(token.pos_) if token.pos_ in UPOS else UPOS.index("X"))
            self.entity.append(
                ENTITY_TYPES.index(token.ent_type_) if token.ent_type_ in ENTITY_TYPES else 0
            )
            vector = (
                np.asarray(token.vector, dtype=np.float32)
                if token.has_vector
                else np.zeros(self.dimension, np.float32)
            )
            norm = float(np.linalg.norm(vector))
            self.vectors.append(vector / norm if norm > 0 else vector)
        return self.index[lemma]

    def edge(self, source: int, target: int, relation: str, label: str = "") -> None:
        if source != target:
            self.edges.setdefault((source, target, RELATIONS.index(relation)), label)

    def build(self) -> PassageGraph:
        keys = sorted(self.edges)
        return PassageGraph(
            lemmas=tuple(self.lemmas),
            pos=np.array(self.pos, dtype=np.int8),
            entity=np.array(self.entity, dtype=np.int8),
            vectors=np.array(self.vectors, dtype=np.float16).reshape(
                len(self.lemmas), self.dimension
            ),
            edges=np.array([(s, t) for s, t, _r in keys], dtype=np.int32).reshape(-1, 2),
            edge_types=np.array([r for _s, _t, r in keys], dtype=np.int8),
            edge_labels=tuple(self.edges[k] for k in keys),
        )


ARGUMENTS = SUBJECTS | OBJECTS | {"pobj", "appos"}


def _is_content(token: Any) -> bool:
    """Content words: numbers, verbs (even common ones such as "give"), and non-stop
    nouns, names, adjectives and adverbs, or any word the parse uses as an argument."""
    if token.like_num:
        return True
    if not token.is_alpha or not token.lemma_.strip():
        return False
    if token.pos_ == "VERB":
        return True
    return not token.is_stop and (token.pos_ in CONTENT_POS or token.dep_ in ARGUMENTS)


class CoreferenceResolver(Protocol):
    """Maps a pronoun's token index to the token it stands for."""

    name: str

    def resolve(self, doc: Any) -> dict[int, Any]: ...


class NoResolution:
    """Pronouns stay unresolved (they are not content words, so they drop out): the
    baseline the resolvers are measured against (``benchmarks/coreference.py``)."""

    name = "none"

    def resolve(self, doc: Any) -> dict[int, Any]:
        return {}


class PronounResolver:
    """Rule-based pronoun resolution, the embedded default where no neural model exists.

    A third-person pronoun refers to the nearest preceding noun or proper noun (within
    the passage) whose grammatical number agrees; "it/its" prefer non-persons, "he/she/
    they" prefer named persons when one is in reach. Crude by design, and measured.
    """

    name = "rule-based"
    PERSONAL = frozenset({"he", "him", "his", "she", "her", "hers", "himself", "herself"})
    NEUTER = frozenset({"it", "its", "itself"})
    PLURAL = frozenset({"they", "them", "their", "theirs", "themselves"})

    def resolve(self, doc: Any) -> dict[int, Any]:
        referents: dict[int, Any] = {}
        candidates: list[Any] = []
        for token in doc:
            lower = token.lower_
            if token.pos_ == "PRON" and lower in self.PERSONAL | self.NEUTER | self.PLURAL:
                referent = self._pick(candidates, lower)
                if referent is not None:
                    referents[token.i] = referent
            elif token.pos_ in ("NOUN", "PROPN") and token.dep_ not in ("compound",):
                candidates.append(token)
        return referents

    def _pick(self, candidates: Sequence[Any], pronoun: str) -> Any | None:
        plural = pronoun in self.PLURAL
        for token in reversed(candidates[-12:]):
            is_plural = "Plur" in token.morph.get("Number")
            if is_plural != plural:
                continue
            is_person = token.ent_type_ == "PERSON"
            if (
                pronoun in self.PERSONAL
                and not is_person
                and any(c.ent_type_ == "PERSON" for c in candidates[-12:])
            ):
                continue
            if pronoun in self.NEUTER and is_person:
                continue
            return token
        return None


class ParseGraphBuilder:
    """Turns spaCy documents into PassageGraphs (the parse happens in ``nlp.pipe``)."""

    def __init__(self, nlp: Any, resolver: CoreferenceResolver | None = None) -> None:
        self._nlp = nlp
        self._resolver = resolver if resolver is not None else PronounResolver()
        self.dimension = int(nlp.vocab.vectors_length) or 300

    @property
    def signature(self) -> str:
        """How the graphs are made, for ingestion fingerprints: another resolver means
        every stored graph is rebuilt. The default's is the bare version, as before."""
        name = self._resolver.name
        return GRAPH_VERSION if name == PronounResolver.name else f"{GRAPH_VERSION}+{name}"

    @property
    def nlp(self) -> Any:
        """The spaCy pipeline that parses for it: what else reads that parse may share it."""
        return self._nlp

    def parse_many(self, texts: Iterable[str], batch_size: int = 32) -> list[Any]:
        return list(self._nlp.pipe(texts, batch_size=batch_size))

    def build_many(self, texts: Iterable[str], batch_size: int = 32) -> list[PassageGraph]:
        return [self.from_doc(doc) for doc in self.parse_many(texts, batch_size)]

    def build(self, text: str) -> PassageGraph:
        return self.from_doc(self._nlp(text))

    def from_doc(self, doc: Any) -> PassageGraph:
        graph = _Builder(self.dimension)
        referents = self._resolver.resolve(doc)

        def resolved(token: Any) -> Any | None:
            token = referents.get(token.i, token)
            return token if _is_content(token) else None

        def node(token: Any) -> int | None:
            target = resolved(token)
            return None if target is None else graph.node(target)

        for token in doc:
            if _is_content(token):
                graph.node(token)
        for token in doc:
            if token.pos_ in ("VERB", "AUX"):
                self._verb_edges(token, node, graph)
            head = node(token.head) if token.head is not token else None
            this = node(token)
            if head is None or this is None:
                continue
            if token.dep_ in NUMERIC or (token.like_num and token.dep_ in MODIFIERS):
                graph.edge(this, head, "numeric")
            elif token.dep_ in MODIFIERS:
                graph.edge(this, head, "modifier")
            elif token.dep_ == "appos":
                graph.edge(head, this, "apposition")
        for token in doc:
            if token.dep_ == "prep":
                self._prep_edges(token, node, graph)
        for sentence in doc.sents:
            roots = [node(ent.root) for ent in sentence.ents]
            present = sorted({r for r in roots if r is not None})
            for a in present:
                for b in present:
                    graph.edge(a, b, "entity_cooccurrence")
        return graph.build()

    @staticmethod
    def _verb_edges(verb: Any, node: Any, graph: _Builder) -> None:
        negated = any(child.dep_ == "neg" for child in verb.children)
        relation = "subject_object_negated" if negated else "subject_object"
        subjects = [c for c in verb.children if c.dep_ in SUBJECTS]
        objects = [c for c in verb.children if c.dep_ in OBJECTS]
        objects += [
            g for c in verb.children if c.dep_ == "agent" for g in c.children if g.dep_ == "pobj"
        ]
        for conj in list(objects):
            objects.extend(c for c in conj.children if c.dep_ == "conj")
        verb_node = node(verb)
        for subject in subjects:
            s = node(subject)
            if s is None:
                continue
            targets = [o for o in (node(obj) for obj in objects) if o is not None]
            if not targets and verb_node is not None:
                targets = [verb_node]  # intransitive: the subject links to its verb
            for o in targets:
                graph.edge(s, o, relation, verb.lemma_.lower())

    @staticmethod
    def _prep_edges(prep: Any, node: Any, graph: _Builder) -> None:
        head = node(prep.head)
        word = prep.lower_
        for pobj in (c for c in prep.children if c.dep_ == "pobj"):
            target = node(pobj)
            if head is None or target is None:
                continue
            if word in TEMPORAL or pobj.ent_type_ in TEMPORAL_ENTITIES:
                relation = "prep_temporal"
            elif word in SPATIAL or pobj.ent_type_ in SPATIAL_ENTITIES:
                relation = "prep_spatial"
            else:
                relation = "prep_other"
            graph.edge(head, target, relation, word)
