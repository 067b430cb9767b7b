"""What the knowledge graph keeps of a chunk: the clinical entities it names, the
abbreviations its document defines, what it says about its own scope (whom it applies
to, what it excludes) and the relations it states (a dose of a drug, what a drug
treats or must not be given with, what a step requires).

Rules over spaCy's parse and a reviewed vocabulary (``clinical_terms.toml``), with
scispacy's abbreviation detector (Schwartz and Hearst) linking each short form to its
long form: no biomedical NER model is available from a package registry, and precise
beats large here, since every relation keeps the span it came from. The same finder
reads a question, so that a question's entities have the keys the graph holds.
"""

from __future__ import annotations

import itertools
import re
import tomllib
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property, lru_cache
from pathlib import Path
from typing import Any

from appliance.records import (
    Chunk,
    ChunkFacts,
    EntityKind,
    Mention,
    Relation,
    RelationKind,
    Scope,
)

TERMS_FILE = Path(__file__).with_name("clinical_terms.toml")
EXTRACTOR_VERSION = "8"
"""Bumped when extraction changes, so that ingestion rebuilds every document's graph."""

_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_DATE = re.compile(rf"\b(\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}} (?:{_MONTHS}) \d{{4}})\b", re.I)
_CLAUSE = re.compile(
    r"\b(section|clause|step|appendix|paragraph)\s+(\d+(?:\.\d+)*(?:\([a-z]\))?)", re.I
)
_UNUSED_PIPES = ("ner",)
"""spaCy's named entities (people, places, organisations) are not clinical ones."""
_HYPHEN = re.compile(r"\s*-\s*")
_STEP = re.compile(r"^[ \t]*(\d{1,2})[.)][ \t]+", re.MULTILINE)
"""A numbered step of a procedure, at the start of a line."""
_STEP_KINDS: frozenset[EntityKind] = frozenset({"procedure", "lab", "drug"})
_CONDITION_LIKE: frozenset[EntityKind] = frozenset({"condition", "population"})


@dataclass(frozen=True, slots=True)
class ClinicalTerms:
    """The reviewed vocabulary, as read from ``clinical_terms.toml``."""

    version: str
    populations: Mapping[str, tuple[str, ...]]
    condition_heads: frozenset[str]
    condition_suffixes: tuple[str, ...]
    procedure_heads: frozenset[str]
    procedure_suffixes: tuple[str, ...]
    lab_tests: tuple[str, ...]
    drug_suffixes: tuple[str, ...]
    drug_names: tuple[str, ...]
    not_drugs: frozenset[str]
    dose_units: tuple[str, ...]
    routes: tuple[str, ...]
    frequencies: tuple[str, ...]
    departments: Mapping[str, tuple[str, ...]]
    hedges: frozenset[str]
    exclusion_cues: tuple[str, ...]
    contraindication_cues: tuple[str, ...]
    inclusion_cues: tuple[str, ...]
    scope_headings: frozenset[str]
    requirement_cues: tuple[str, ...]
    indication_words: frozenset[str]
    stopping_verbs: frozenset[str]
    time_nouns: frozenset[str]
    time_counted_from: frozenset[str]

    @classmethod
    def load(cls, path: Path = TERMS_FILE) -> ClinicalTerms:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
        lang, drugs = raw["language"], raw["drugs"]
        return cls(
            version=str(raw["version"]),
            populations={k: tuple(v) for k, v in raw["populations"].items()},
            condition_heads=frozenset(raw["conditions"]["heads"]),
            condition_suffixes=tuple(raw["conditions"]["suffixes"]),
            procedure_heads=frozenset(raw["procedures"]["heads"]),
            procedure_suffixes=tuple(raw["procedures"]["suffixes"]),
            lab_tests=tuple(raw["labs"]["tests"]),
            drug_suffixes=tuple(drugs["suffixes"]),
            drug_names=tuple(drugs["names"]),
            not_drugs=frozenset(drugs["not_drugs"]),
            dose_units=tuple(drugs["units"]),
            routes=tuple(drugs["routes"]),
            frequencies=tuple(drugs["frequencies"]),
            departments={k: tuple(v) for k, v in raw["departments"].items()},
            hedges=frozenset(lang["hedges"]),
            exclusion_cues=tuple(lang["exclusion_cues"]),
            contraindication_cues=tuple(lang["contraindication_cues"]),
            inclusion_cues=tuple(lang["inclusion_cues"]),
            scope_headings=frozenset(lang["scope_headings"]),
            requirement_cues=tuple(lang["requirement_cues"]),
            indication_words=frozenset(lang["indication_words"]),
            stopping_verbs=frozenset(lang["stopping_verbs"]),
            time_nouns=frozenset(lang["time_nouns"]),
            time_counted_from=frozenset(lang["time_counted_from"]),
        )

    def drugs_named(self, text: str) -> set[str]:
        """The drugs a text names, read from its words alone (no parse): the
        vocabulary's names, and words with a drug's ending that are not look-alikes."""
        lower = text.lower()
        named = set(_whole_words(self.drug_names).findall(lower))
        for word in re.findall(r"[a-z]+", lower):
            if word not in self.not_drugs and self.has_drug_ending(word):
                named.add(word)
        return named

    def has_drug_ending(self, word: str) -> bool:
        """Whether a lower-case word ends as a drug's name does, with a stem of at least
        three letters before the ending. Most words have none of the endings: one
        ``str.endswith`` of them all says so before any length is compared."""
        return word.endswith(self.drug_suffixes) and any(
            word.endswith(s) and len(word) >= len(s) + 3 for s in self.drug_suffixes
        )


@cache
def _whole_words(phrases: tuple[str, ...]) -> re.Pattern[str]:
    """One pattern for all of ``phrases`` as whole words, compiled once per vocabulary:
    longest first, so that "magnesium sulfate" is found rather than a shorter name in it."""
    ordered = sorted(phrases, key=len, reverse=True)
    return re.compile(rf"(?<![a-z])(?:{'|'.join(map(re.escape, ordered))})(?![a-z])")


class ClinicalFactExtractor:
    """Chunks to ``ChunkFacts``; questions to the entity keys the graph holds."""

    def __init__(self, nlp: Any, terms: ClinicalTerms | None = None) -> None:
        from scispacy.abbreviation import AbbreviationDetector
        from spacy.matcher import PhraseMatcher

        self._nlp = nlp
        self._terms = terms or ClinicalTerms.load()
        self._abbreviations = AbbreviationDetector(nlp)
        self._phrases = PhraseMatcher(nlp.vocab, attr="LOWER")
        self._canonical: dict[str, tuple[EntityKind, str]] = {}
        for kind, groups in (
            ("population", self._terms.populations),
            ("department", self._terms.departments),
        ):
            for key, words in groups.items():
                self._add_phrases(kind, key, words)  # type: ignore[arg-type]
        for test in self._terms.lab_tests:
            self._add_phrases("lab", test, (test,))
        for name in self._terms.drug_names:
            self._add_phrases("drug", name, (name,))
        units = "|".join(
            re.escape(u) for u in sorted(self._terms.dose_units, key=len, reverse=True)
        )
        routes = "|".join(re.escape(r) for r in self._terms.routes)
        self._dose = re.compile(
            rf"^\W{{0,3}}(\d+(?:\.\d+)?)\s?({units})(?![a-z])(?:\s+({routes})\b)?", re.I
        )
        # A question is read by the graph retriever and again by the scope check: once.
        self._parsed_question = lru_cache(maxsize=64)(self._parse_question)

    def _parse_question(self, question: str) -> Any:
        return next(iter(self._nlp.pipe([question], disable=_UNUSED_PIPES)))

    @property
    def nlp(self) -> Any:
        """The spaCy pipeline it reads: a parse by this same pipeline may be handed in."""
        return self._nlp

    @cached_property
    def signature(self) -> str:
        """Part of each document's fingerprint: another vocabulary or extractor rebuilds."""
        return f"facts={EXTRACTOR_VERSION}.{self._terms.version}"

    def _add_phrases(self, kind: EntityKind, key: str, words: Sequence[str]) -> None:
        label = f"{kind}:{key}"
        self._canonical[label] = (kind, key)
        self._phrases.add(label, [self._nlp.make_doc(w) for w in words])

    # -- chunks --------------------------------------------------------------------

    def extract(
        self, chunks: Sequence[Chunk], parsed: Sequence[Any] | None = None
    ) -> list[ChunkFacts]:
        """The facts of each chunk, in order. Abbreviations are defined per document:
        a short form explained in one chunk is read as its long form in every chunk.

        ``parsed``: each chunk's ``index_text`` as ``nlp`` parsed it already (ingestion
        parses once for CAGE's graphs and for the facts); without it, each chunk's text
        is parsed here."""
        if parsed is None:
            docs = list(self._nlp.pipe([c.text for c in chunks], disable=_UNUSED_PIPES))
        else:
            docs = [_own_text(c, doc) for c, doc in zip(chunks, parsed, strict=True)]
        headings: dict[str, list[str]] = {}
        for chunk in chunks:  # titles and headings define abbreviations too
            seen = headings.setdefault(chunk.doc_id, [chunk.metadata.title])
            seen.extend(h for h in chunk.heading_path if h not in seen)
        defined: dict[str, dict[str, tuple[str, EntityKind]]] = {}
        heading_docs = self._nlp.pipe(
            ["\n".join(h) for h in headings.values()], disable=_UNUSED_PIPES
        )
        for doc_id, doc in zip(headings, heading_docs, strict=True):
            self._define(defined.setdefault(doc_id, {}), doc)
        for chunk, doc in zip(chunks, docs, strict=True):
            self._define(defined.setdefault(chunk.doc_id, {}), doc)
        return [
            self._facts(chunk, doc, defined.get(chunk.doc_id, {}))
            for chunk, doc in zip(chunks, docs, strict=True)
        ]

    def _define(self, defined: dict[str, tuple[str, EntityKind]], doc: Any) -> None:
        for short, long_form in self._defined_in(doc):
            kind = self._kind_of_phrase(long_form) or "procedure"
            defined[short] = (self.key_of(long_form), kind)

    def _defined_in(self, doc: Any) -> list[tuple[str, Any]]:
        with warnings.catch_warnings():  # its second matcher has no patterns, by design
            warnings.filterwarnings("ignore", message=r"\[W036\]")
            self._abbreviations(doc)
        return [(short.text.lower(), short._.long_form) for short in doc._.abbreviations]

    def _facts(
        self, chunk: Chunk, doc: Any, defined: Mapping[str, tuple[str, EntityKind]]
    ) -> ChunkFacts:
        mentions = self.mentions(doc, defined)
        heading = chunk.heading_path[-1].lower() if chunk.heading_path else ""
        under_scope_heading = heading in self._terms.scope_headings
        scopes: list[Scope] = []
        relations: list[Relation] = []
        for sentence in doc.sents:
            inside = [
                m for m in mentions if sentence.start_char <= m.start and m.end <= sentence.end_char
            ]
            text = sentence.text.lower()
            exclusion = _first_cue(text, self._terms.exclusion_cues)
            if exclusion is not None:
                cut = sentence.start_char + exclusion
                for m in inside:
                    if m.kind in _CONDITION_LIKE and m.start >= cut:
                        scopes.append(
                            Scope("EXCLUDES", m.key, sentence.start_char, sentence.end_char)
                        )
                        relations += self._contraindications(inside, m, sentence)
            elif under_scope_heading or _first_cue(text, self._terms.inclusion_cues) is not None:
                for m in inside:
                    if m.kind in _CONDITION_LIKE:
                        scopes.append(
                            Scope("APPLIES_TO", m.key, sentence.start_char, sentence.end_char)
                        )
            # "Carboprost 250 micrograms IM; avoid in asthma": a drug's own contraindication,
            # not the passage's scope, and its dose is not a dose for what follows the cue.
            caution = (
                _first_cue(text, self._terms.contraindication_cues) if exclusion is None else None
            )
            given = inside
            if caution is not None:
                cut = sentence.start_char + caution
                for m in inside:
                    if m.kind in _CONDITION_LIKE and m.start >= cut:
                        relations += self._contraindications(inside, m, sentence)
                given = [m for m in inside if m.start < cut]
            if exclusion is None:
                relations += self._doses_and_treatments(chunk.text, given, sentence)
            relations += self._requirements(text, inside, sentence)
        relations += _next_steps(chunk.text, mentions)
        abbreviations = tuple(sorted({(s, key) for s, (key, _) in defined.items()
                                      if any(m.key == key for m in mentions)}))  # fmt: skip
        return ChunkFacts(
            chunk, tuple(mentions), tuple(_unique(relations)), tuple(_unique(scopes)), abbreviations
        )

    def _contraindications(
        self, inside: list[Mention], target: Mention, sentence: Any
    ) -> list[Relation]:
        """Every drug the sentence names before the condition after its cue ("metformin
        is contraindicated in ...", "do not give heparin in ...", "avoid NSAIDs in ...")."""
        return [
            Relation(
                "CONTRAINDICATED_WITH", m.key, target.key, sentence.start_char, sentence.end_char
            )
            for m in inside
            if m.kind == "drug" and m.start < target.start
        ]

    def _doses_and_treatments(
        self, text: str, inside: list[Mention], sentence: Any
    ) -> list[Relation]:
        relations: list[Relation] = []
        targets = [
            m for m in inside if m.kind in _CONDITION_LIKE and not self._says_when(m, sentence)
        ]
        for drug in (m for m in inside if m.kind == "drug"):
            dose = self._dose.match(text[drug.end : sentence.end_char])
            if dose is None:
                continue
            for target in targets[:1]:
                details = [("amount", dose.group(1)), ("unit", dose.group(2))]
                if dose.group(3):
                    details.append(("route", dose.group(3)))
                frequency = _first_cue(
                    text[drug.end : sentence.end_char].lower(), self._terms.frequencies
                )
                if frequency is not None:
                    found = text[drug.end + frequency : sentence.end_char].lower()
                    named = next(f for f in self._terms.frequencies if found.startswith(f))
                    details.append(("frequency", named))
                relations.append(
                    Relation("DOSE_OF", drug.key, target.key, drug.start,
                             drug.end + dose.end(), tuple(details))
                )  # fmt: skip
        for drug in (m for m in inside if m.kind == "drug"):
            for target in inside:
                if target.kind != "condition":
                    continue
                kind = self._indication(drug, target, sentence)
                if kind is not None:
                    relations.append(
                        Relation(kind, drug.key, target.key, sentence.start_char, sentence.end_char)
                    )
        return relations

    def _says_when(self, condition: Mention, sentence: Any) -> bool:
        """Whether the sentence names the condition only to count time from it:
        "tranexamic acid 1 g IV within 3 hours of injury" is no dose for an injury. "At 5
        minutes of seizure" counts the seizure's own length and is not this."""
        span = sentence.doc.char_span(condition.start, condition.end, alignment_mode="expand")
        if span is None:
            return False
        of = span.root.head
        period = of.head
        return (
            span.root.dep_ == "pobj"
            and of.lower_ == "of"
            and period.lemma_.lower() in self._terms.time_nouns
            and period.head.lower_ in self._terms.time_counted_from
        )

    def _indication(self, drug: Mention, condition: Mention, sentence: Any) -> RelationKind | None:
        """What the sentence says of giving the drug for the condition, read from its parse:
        TREATS when the two are joined through an indication's word ("give meropenem for
        ...", "reserved for ...", "in every postpartum haemorrhage"), NOT_INDICATED_FOR
        when the way between them is negated ("may be used for distress, not to prevent
        febrile seizures"), and nothing when the drug is stopped ("stop warfarin"),
        described ("glucagon is less effective in ...") or merely named beside the
        condition: "anaphylaxis to co-amoxiclav" says the opposite of a treatment."""
        doc = sentence.doc
        drug_span = doc.char_span(drug.start, drug.end, alignment_mode="expand")
        condition_span = doc.char_span(condition.start, condition.end, alignment_mode="expand")
        if drug_span is None or condition_span is None:
            return None
        path = _tree_path(drug_span.root, condition_span.root)
        if path is None:
            return None
        governor = next((t for t in drug_span.root.ancestors if t.pos_ in ("VERB", "AUX")), None)
        if governor is not None:
            if governor.lemma_.lower() in self._terms.stopping_verbs:
                return None
            if governor.lemma_ == "be" and drug_span.root.dep_ == "nsubj":
                return None
        if any(child.dep_ == "neg" for t in path for child in t.children):
            return "NOT_INDICATED_FOR"
        if any(t.lower_ in self._terms.indication_words for t in path):
            return "TREATS"
        return None

    def _requirements(self, text: str, inside: list[Mention], sentence: Any) -> list[Relation]:
        cue = _first_cue(text, self._terms.requirement_cues)
        if cue is None:
            return []
        cut = sentence.start_char + cue
        before = [m for m in inside if m.end <= cut and m.kind != "date"]
        after = [m for m in inside if m.start >= cut and m.kind in ("procedure", "lab", "drug")]
        if not before or not after:
            return []
        kind: RelationKind = "REQUIRES"
        return [Relation(kind, before[-1].key, a.key, sentence.start_char, sentence.end_char)
                for a in after if a.key != before[-1].key]  # fmt: skip

    # -- entities ------------------------------------------------------------------

    def mentions(
        self, doc: Any, defined: Mapping[str, tuple[str, EntityKind]] | None = None
    ) -> list[Mention]:
        """Every entity a parsed text names, in reading order; ``defined`` maps short
        forms (lowercase) to the key and kind of their long form."""
        found: dict[tuple[int, int, EntityKind], Mention] = {}

        def add(kind: EntityKind, key: str, start: int, end: int) -> None:
            if key and (start, end, kind) not in found:
                found[(start, end, kind)] = Mention(key, kind, start, end, doc.text[start:end])

        taken: set[int] = set()
        for label, start, end in self._phrases(doc):
            span = doc[start:end]
            kind, key = self._canonical[self._nlp.vocab.strings[label]]
            add(kind, key, span.start_char, span.end_char)
            taken.update(range(start, end))
        for token in doc:
            lower = token.text.lower()
            if defined and lower in defined and token.i not in taken:
                key, kind = defined[lower]
                add(kind, key, token.idx, token.idx + len(token.text))
                taken.add(token.i)
            elif token.i not in taken and self._is_drug(token):
                add("drug", lower, token.idx, token.idx + len(token.text))
        for chunk in doc.noun_chunks:
            tokens = [t for t in chunk if t.i not in taken]
            if not tokens or tokens[-1].i != chunk.root.i:
                continue
            head_kind = self._kind_of_head(chunk.root)
            if head_kind is not None:
                key = self._key_of_tokens(tokens)
                first = next((t for t in tokens if t.text.lower() in key.split()), tokens[0])
                add(head_kind, key, first.idx, chunk.end_char)
        for match in _DATE.finditer(doc.text):
            add("date", match.group(1).lower(), match.start(), match.end())
        for match in _CLAUSE.finditer(doc.text):
            add(
                "clause",
                f"{match.group(1).lower()} {match.group(2).lower()}",
                match.start(),
                match.end(),
            )
        conditions = [m for m in found.values() if m.kind == "condition"]
        kept = [
            m
            for m in found.values()
            if m.kind != "drug"
            or not any(c.start <= m.start and m.end <= c.end and c.end - c.start > m.end - m.start
                       for c in conditions)
        ]  # fmt: skip
        return sorted(kept, key=lambda m: (m.start, m.end, m.kind))

    def question_keys(self, question: str, abbreviations: Mapping[str, str]) -> list[Mention]:
        """The entities a question names, with the graph's abbreviations read as their
        long forms (``abbreviations``: short form -> entity key)."""
        defined = {short: (key, "condition") for short, key in abbreviations.items()}
        return self.mentions(self._parsed_question(question), defined)  # type: ignore[arg-type]

    def _is_drug(self, token: Any) -> bool:
        lower = token.text.lower()
        if token.pos_ not in ("NOUN", "PROPN", "ADJ") or not lower.isalpha():
            return False
        return lower not in self._terms.not_drugs and self._terms.has_drug_ending(lower)

    def _kind_of_head(self, head: Any) -> EntityKind | None:
        lemma = head.lemma_.lower()
        lower = head.text.lower()
        if lemma in self._terms.condition_heads or lower in self._terms.condition_heads:
            return "condition"
        if lemma in self._terms.procedure_heads or lower in self._terms.procedure_heads:
            return "procedure"
        if head.pos_ in ("NOUN", "PROPN") and len(lower) > 6:
            if lower.endswith(self._terms.condition_suffixes):
                return "condition"
            if lower.endswith(self._terms.procedure_suffixes):
                return "procedure"
        return None

    def _kind_of_phrase(self, span: Any) -> EntityKind | None:
        return self._kind_of_head(span.root) if len(span) else None

    def key_of(self, span: Any) -> str:
        """The canonical name of a noun phrase: its words without determiners, counts,
        punctuation or hedges ("a documented penicillin allergy" -> "penicillin allergy"),
        the head in its dictionary form. A number right after a noun is part of the name
        ("type 1 diabetes" is not "type 2 diabetes")."""
        return self._key_of_tokens(list(span))

    def _key_of_tokens(self, tokens: Sequence[Any]) -> str:
        kept: list[Any] = []
        for t in tokens:
            if t.pos_ == "NUM":
                if kept and kept[-1].i == t.i - 1 and kept[-1].pos_ in ("NOUN", "PROPN"):
                    kept.append(t)
            elif (
                t.pos_ not in ("DET", "PRON", "PUNCT", "CCONJ", "ADP")
                and t.text.lower() not in self._terms.hedges
                and not t.is_stop
            ):
                kept.append(t)
        words = [t.text.lower() for t in kept]
        if kept:
            words[-1] = self._head_form(kept[-1])
        return _HYPHEN.sub("-", " ".join(words))

    def _head_form(self, head: Any) -> str:
        """A head noun in its singular ("infections" -> "infection"), except where the
        lemmatiser would cut a word that only looks plural ("diabetes", "sepsis")."""
        lower = head.text.lower()
        terms = self._terms
        if lower in terms.condition_heads or lower in terms.procedure_heads:
            return lower
        if lower.endswith(("sis", "tes", "us", "ss", "is")):
            return lower
        return str(head.lemma_).lower()


def _own_text(chunk: Chunk, doc: Any) -> Any:
    """The parse of a chunk's own text out of the parse of its ``index_text``: spans
    count from the chunk's first character, and a repeated table header states nothing."""
    if not chunk.context:
        return doc
    span = doc.char_span(len(chunk.context) + 1, len(doc.text), alignment_mode="contract")
    if span is None or not len(span):
        return doc[0:0].as_doc()
    return span.as_doc()


def _next_steps(text: str, mentions: Sequence[Mention]) -> list[Relation]:
    """NEXT_STEP between the first thing done in each numbered step and the first in the
    step numbered after it ("1. Measure serum lactate." -> "2. Take blood cultures")."""
    starts = [(int(m.group(1)), m.start()) for m in _STEP.finditer(text)]
    if len(starts) < 2:
        return []
    steps: list[tuple[int, int, int, Mention | None]] = []
    for (number, start), following in zip(starts, [*starts[1:], (0, len(text))], strict=True):
        end = following[1]
        done = next((m for m in mentions if start <= m.start < end and m.kind in _STEP_KINDS), None)
        steps.append((number, start, end, done))
    return [
        Relation("NEXT_STEP", a.key, b.key, start, end)
        for (n, start, _, a), (m, _, end, b) in itertools.pairwise(steps)
        if m == n + 1 and a is not None and b is not None and a.key != b.key
    ]


def _tree_path(a: Any, b: Any) -> list[Any] | None:
    """The tokens between two tokens of one parse, through their lowest common head
    (included unless it is one of them); None when they are not in one tree."""
    above_a = [a, *a.ancestors]
    above_b = [b, *b.ancestors]
    common = next((t for t in above_a if t in above_b), None)
    if common is None:
        return None
    inner = above_a[1 : above_a.index(common) + 1] + above_b[1 : above_b.index(common)]
    return [t for t in inner if t not in (a, b)]


def _first_cue(text: str, cues: Sequence[str]) -> int | None:
    """Where the first cue stands in ``text`` (a whole-word match), if any does."""
    best: int | None = None
    for cue in cues:
        match = re.search(rf"(?<![a-z]){re.escape(cue)}(?![a-z])", text)
        if match is not None and (best is None or match.start() < best):
            best = match.start()
    return best


def _unique(items: list[Any]) -> list[Any]:
    return list(dict.fromkeys(items))
