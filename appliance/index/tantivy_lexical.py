"""Lexical BM25 on tantivy, embedded in the process (the default).

Why tantivy: a real BM25 engine (Lucene's design in Rust) with an on-disk index,
boolean queries that carry our filters inside the search, and no server to run.

Two analyses of the same text are indexed: an English stemmed one for ordinary
words, and an identifier one that keeps clinical codes whole (``E11.9`` is a single
term and never matches ``E11.65``; ``14.2(b)`` and ``HbA1c`` likewise).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import tantivy
from tantivy import FieldType, Filter, Occur, Query, TextAnalyzerBuilder, Tokenizer

from appliance.index.analysis import (
    HAS_DIGIT,
    IDENTIFIER_PATTERN,
    MAX_TOKEN_CHARS,
    STEMMER_LANGUAGE,
    TEXT_FIELDS,
    query_words,
    stop_words,
)
from appliance.index.base import ScoredChunkId
from appliance.index.filters import (
    NO_PATIENT,
    ActiveOn,
    AllOf,
    AnyOf,
    NoneOf,
    OneOf,
    SearchFilter,
    day_number,
)
from appliance.records import OPEN_ENDED, Chunk

_TEXT_FIELDS = list(TEXT_FIELDS)


def stemmed_analyzer(stop_words: Sequence[str] = ()) -> tantivy.TextAnalyzer:
    """English words, lowercased, folded to ASCII and stemmed; without ``stop_words``."""
    builder = (
        TextAnalyzerBuilder(Tokenizer.simple())
        .filter(Filter.remove_long(MAX_TOKEN_CHARS))
        .filter(Filter.lowercase())
        .filter(Filter.ascii_fold())
    )
    if stop_words:
        builder = builder.filter(Filter.custom_stopword(list(stop_words)))
    return builder.filter(Filter.stemmer(STEMMER_LANGUAGE)).build()


def content_term_analyzer() -> tantivy.TextAnalyzer:
    """The stemmed analysis without function words: the terms a question is about."""
    return stemmed_analyzer(stop_words())


def identifier_analyzer() -> tantivy.TextAnalyzer:
    return (
        TextAnalyzerBuilder(Tokenizer.regex(IDENTIFIER_PATTERN)).filter(Filter.lowercase()).build()
    )


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("chunk_id", stored=True, tokenizer_name="raw")
    builder.add_text_field("doc_id", stored=True, tokenizer_name="raw")
    for name in _TEXT_FIELDS:
        builder.add_text_field(name, tokenizer_name="clinical_en")
    builder.add_text_field("identifiers", tokenizer_name="clinical_ids", index_option="freq")
    for name in ("doc_type", "departments", "sensitivity", "owner", "patient_id"):
        builder.add_text_field(name, tokenizer_name="raw", index_option="basic")
    builder.add_integer_field("effective_from", indexed=True, fast=True)
    builder.add_integer_field("effective_to", indexed=True, fast=True)
    return builder.build()


class TantivyLexicalIndex:
    """BM25 over title, heading path and text, boosted in that order."""

    name = "lexical"

    def __init__(
        self,
        path: Path,
        *,
        title_boost: float = 2.0,
        heading_boost: float = 1.5,
        identifier_boost: float = 3.0,
        writer_heap_bytes: int = 64_000_000,
    ) -> None:
        path.mkdir(parents=True, exist_ok=True)
        self._schema = _schema()
        self._index = tantivy.Index(self._schema, path=str(path), reuse=True)
        self._index.register_tokenizer("clinical_en", stemmed_analyzer())
        self._index.register_tokenizer("clinical_ids", identifier_analyzer())
        self._identifiers = identifier_analyzer()
        self._content_terms = content_term_analyzer()
        self._boosts = {"title": title_boost, "headings": heading_boost}
        self._identifier_boost = identifier_boost
        self._writer_heap_bytes = writer_heap_bytes
        self._writer: tantivy.IndexWriter | None = None

    # -- writing -------------------------------------------------------------------------

    def _open_writer(self) -> tantivy.IndexWriter:
        if self._writer is None:
            self._writer = self._index.writer(heap_size=self._writer_heap_bytes, num_threads=1)
        return self._writer

    def upsert(self, chunks: Sequence[Chunk]) -> None:
        writer = self._open_writer()
        for chunk in chunks:
            writer.delete_documents_by_term("chunk_id", chunk.chunk_id)
            writer.add_document(self._document(chunk))

    def delete_documents(self, doc_ids: Sequence[str]) -> None:
        writer = self._open_writer()
        for doc_id in doc_ids:
            writer.delete_documents_by_term("doc_id", doc_id)

    def commit(self) -> None:
        if self._writer is not None:
            self._writer.commit()
            self._writer.wait_merging_threads()
            self._writer = None
        self._index.reload()

    def _document(self, chunk: Chunk) -> tantivy.Document:
        meta = chunk.metadata
        headings = " / ".join(chunk.heading_path)
        document = tantivy.Document(
            chunk_id=chunk.chunk_id,
            doc_id=chunk.doc_id,
            title=meta.title,
            headings=headings,
            body=chunk.index_text,
            identifiers=f"{meta.title}\n{headings}\n{chunk.index_text}",
            doc_type=meta.doc_type,
            sensitivity=meta.sensitivity,
            owner=meta.owner,
            patient_id=meta.patient_id or NO_PATIENT,
            effective_from=day_number(meta.effective_from),
            effective_to=day_number(meta.effective_to or OPEN_ENDED),
        )
        for department in meta.departments:
            document.add_text("departments", department)
        return document

    # -- reading -------------------------------------------------------------------------

    def search(
        self, query: str, limit: int, search_filter: SearchFilter | None = None
    ) -> list[ScoredChunkId]:
        text_query = self._text_query(query)
        if text_query is None or limit <= 0:
            return []
        clauses: list[tuple[Occur, Query]] = [(Occur.Must, text_query)]
        if search_filter is not None:
            # Score-neutral: the filter decides membership, BM25 alone decides order.
            clauses.append((Occur.Must, Query.const_score_query(self._compile(search_filter), 0.0)))
        searcher = self._index.searcher()
        hits = searcher.search(Query.boolean_query(clauses), limit, count=False).hits
        return [
            ScoredChunkId(searcher.doc(address)["chunk_id"][0], float(score))
            for score, address in hits
        ]

    def _text_query(self, query: str) -> Query | None:
        # Query syntax characters are data here, never operators: strip them, and
        # lowercase so that AND/OR/NOT typed by a user are ordinary words.
        words = query_words(query)
        should: list[tuple[Occur, Query]] = []
        if words:
            parsed, _errors = self._index.parse_query_lenient(
                " ".join(words), default_field_names=_TEXT_FIELDS, field_boosts=self._boosts
            )
            should.append((Occur.Should, parsed))
        identifiers = sorted(
            {token for token in self._identifiers.analyze(query) if HAS_DIGIT.search(token)}
        )
        for token in identifiers:
            term = Query.term_query(self._schema, "identifiers", token)
            should.append((Occur.Should, Query.boost_query(term, self._identifier_boost)))
        if not should:
            return None
        return Query.boolean_query(should)

    def _compile(self, search_filter: SearchFilter) -> Query:
        match search_filter:
            case AnyOf(field=name, values=values):
                if not values:
                    return Query.empty_query()
                return Query.term_set_query(self._schema, name, list(values))
            case ActiveOn(day=day):
                n = day_number(day)
                started = Query.range_query(
                    self._schema, "effective_from", FieldType.Integer, None, n
                )
                not_ended = Query.range_query(
                    self._schema, "effective_to", FieldType.Integer, n, None, include_lower=False
                )
                return Query.boolean_query([(Occur.Must, started), (Occur.Must, not_ended)])
            case AllOf(clauses=clauses):
                if not clauses:
                    return Query.all_query()
                return Query.boolean_query([(Occur.Must, self._compile(c)) for c in clauses])
            case OneOf(clauses=clauses):
                if not clauses:
                    return Query.empty_query()
                return Query.boolean_query([(Occur.Should, self._compile(c)) for c in clauses])
            case NoneOf(clauses=clauses):
                return Query.boolean_query(
                    [(Occur.Must, Query.all_query())]
                    + [(Occur.MustNot, self._compile(c)) for c in clauses]
                )
        raise TypeError(f"not a search filter: {search_filter!r}")

    def count(self) -> int:
        return int(self._index.searcher().num_docs)

    def content_terms(self, text: str) -> list[str]:
        """The stemmed content words of a text, in order, each once (numbers left out)."""
        terms = self._content_terms.analyze(text)
        return [t for t in dict.fromkeys(terms) if len(t) > 1 and not t.isdigit()]

    def document_frequencies(
        self, terms: Sequence[str], search_filter: SearchFilter | None = None
    ) -> tuple[dict[str, int], int]:
        """How many chunks contain each term, and how many chunks there are, counting only
        the chunks the filter admits: what a subject may not read never weighs."""
        searcher = self._index.searcher()
        admitted = self._compile(search_filter) if search_filter is not None else None

        def count(query: Query) -> int:
            if admitted is not None:
                query = Query.boolean_query([(Occur.Must, query), (Occur.Must, admitted)])
            found = searcher.search(query, 1, count=True)
            return int(found.count)  # type: ignore[attr-defined]  # tantivy's stub lacks it

        def containing(term: str) -> Query:
            fields = [Query.term_query(self._schema, f, term) for f in _TEXT_FIELDS]
            return Query.boolean_query([(Occur.Should, q) for q in fields])

        frequencies = {term: count(containing(term)) for term in terms}
        return frequencies, count(Query.all_query())

    def chunk_ids_of(self, doc_id: str) -> set[str]:
        searcher = self._index.searcher()
        term = Query.term_query(self._schema, "doc_id", doc_id)
        limit = max(1, int(searcher.num_docs))
        hits = searcher.search(term, limit, count=False).hits
        return {searcher.doc(address)["chunk_id"][0] for _score, address in hits}

    def close(self) -> None:
        if self._writer is not None:
            self._writer.rollback()
            self._writer = None
