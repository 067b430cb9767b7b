"""Lexical BM25 on an OpenSearch cluster (``lexical.engine = "opensearch"``).

Why OpenSearch: the BM25 server a hospital runs when one machine's embedded index is
not enough (shards, replicas, a cluster that outlives any one appliance process). It
holds the same fields with the same analysis as the embedded tantivy index, both built
from ``index.analysis``: an English stemmed analysis for words and an identifier one that
keeps clinical codes whole, so a question finds the same chunks whichever engine holds
them.

Writes go in bulk (with retries when the cluster pushes back) and become searchable at
``commit`` (a refresh): ingestion writes a batch, then questions read it. Filters are
compiled into the query's filter context, so they decide membership without touching
the BM25 order. Every failure to reach the cluster is a ``StoreUnavailable`` that names
the cluster, never a partial result.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from opensearchpy import OpenSearch, helpers
from opensearchpy.exceptions import (
    ConnectionError as OpenSearchConnectionError,
)
from opensearchpy.exceptions import (
    ConnectionTimeout,
    NotFoundError,
    RequestError,
    TransportError,
)

from appliance.index.analysis import (
    HAS_DIGIT,
    IDENTIFIER_PATTERN,
    MAX_TOKEN_CHARS,
    STEMMER_LANGUAGE,
    TEXT_FIELDS,
    query_words,
    stop_words,
)
from appliance.index.base import STORE_LAYOUT_VERSION, ScoredChunkId, StoreUnavailable
from appliance.index.filters import (
    FILTER_FIELDS,
    NO_PATIENT,
    ActiveOn,
    AllOf,
    AnyOf,
    NoneOf,
    OneOf,
    SearchFilter,
)
from appliance.records import OPEN_ENDED, Chunk

_WORDS = "clinical_en"
_CONTENT = "clinical_content"
_IDENTIFIERS = "clinical_ids"
_MATCH_NOTHING: dict[str, Any] = {"bool": {"must_not": [{"match_all": {}}]}}
_IDENTIFIER = re.compile(IDENTIFIER_PATTERN)
_WORD_PARTS = re.compile(r"[^\W_]+")
"""The runs of letters and digits the word analyser keeps of a word."""
MAX_QUERY_WORDS = 300
"""Words of one question searched (a clause per word and text field): OpenSearch refuses
a query of more than 1,024 clauses, and a question this long is a pasted document."""


def index_name(prefix: str) -> str:
    """Versioned with the store layout: a layout change means a new, empty index."""
    return f"{prefix}-chunks-v{STORE_LAYOUT_VERSION}"


def analysis_settings() -> dict[str, Any]:
    """The analysers of ``index.analysis`` in OpenSearch's terms (tantivy's simple
    tokenizer splits on anything not a letter or digit; its long-token filter keeps
    tokens shorter than the limit)."""
    word_filters = ["clinical_length", "lowercase", "asciifolding"]
    return {
        "tokenizer": {
            "clinical_words": {"type": "pattern", "pattern": r"[^\p{L}\p{N}]+"},
            "clinical_identifiers": {"type": "pattern", "pattern": IDENTIFIER_PATTERN, "group": 0},
        },
        "filter": {
            "clinical_length": {"type": "length", "max": MAX_TOKEN_CHARS - 1},
            "clinical_stop": {"type": "stop", "stopwords": stop_words()},
            "clinical_stemmer": {"type": "snowball", "language": STEMMER_LANGUAGE.title()},
        },
        "analyzer": {
            _WORDS: {
                "type": "custom",
                "tokenizer": "clinical_words",
                "filter": [*word_filters, "clinical_stemmer"],
            },
            _CONTENT: {
                "type": "custom",
                "tokenizer": "clinical_words",
                "filter": [*word_filters, "clinical_stop", "clinical_stemmer"],
            },
            _IDENTIFIERS: {
                "type": "custom",
                "tokenizer": "clinical_identifiers",
                "filter": ["lowercase"],
            },
        },
    }


def index_body(shards: int = 1, replicas: int = 0) -> dict[str, Any]:
    """Explicit settings and mapping: nothing is guessed from the first document."""
    keywords = {name: {"type": "keyword"} for name in ("chunk_id", *FILTER_FIELDS)}
    texts = {name: {"type": "text", "analyzer": _WORDS} for name in TEXT_FIELDS}
    days = {"type": "date", "format": "strict_date"}
    return {
        "settings": {
            "index": {"number_of_shards": shards, "number_of_replicas": replicas},
            "analysis": analysis_settings(),
        },
        "mappings": {
            "dynamic": "strict",
            "properties": {
                **keywords,
                **texts,
                "identifiers": {
                    "type": "text",
                    "analyzer": _IDENTIFIERS,
                    "index_options": "freqs",
                },
                "effective_from": days,
                "effective_to": days,
            },
        },
    }


class OpenSearchLexicalIndex:
    """BM25 over title, heading path and text on an OpenSearch index, boosted in that
    order, with an exact-identifier field; also the engine's term statistics."""

    name = "lexical"

    def __init__(
        self,
        client: OpenSearch,
        *,
        index_prefix: str = "appliance",
        where: str = "OpenSearch",
        title_boost: float = 2.0,
        heading_boost: float = 1.5,
        identifier_boost: float = 3.0,
        bulk_chunks: int = 500,
        max_retries: int = 3,
        shards: int = 1,
        replicas: int = 0,
    ) -> None:
        self._client = client
        self._where = where
        self.index = index_name(index_prefix)
        self._boosts = {
            field: {"title": title_boost, "headings": heading_boost}.get(field, 1.0)
            for field in TEXT_FIELDS
        }
        self._identifier_boost = identifier_boost
        self._bulk_chunks = bulk_chunks
        self._max_retries = max_retries
        self._shards = shards
        self._replicas = replicas
        self._created = False

    def _ensure_index(self) -> None:
        """Creates the index on first use, not when the store is opened: an appliance
        whose cluster is down still starts, and says so on the first question."""
        if self._created:
            return
        if not self._client.indices.exists(index=self.index):
            try:
                self._client.indices.create(
                    index=self.index, body=index_body(self._shards, self._replicas)
                )
            except RequestError as error:
                # Another process created it between the check and the create.
                if error.error != "resource_already_exists_exception":
                    raise
        self._created = True

    @contextmanager
    def _reaching(self, doing: str) -> Iterator[None]:
        """Turns a cluster that cannot be reached into one clear error (and makes the
        index first, if this is the first use)."""
        try:
            self._ensure_index()
            yield
        except (OpenSearchConnectionError, ConnectionTimeout) as error:
            reason = error.info if error.info is not None else error  # the socket's own words
            raise StoreUnavailable(
                "lexical", f"{self._where} did not answer when asked to {doing} ({reason})"
            ) from error
        except helpers.BulkIndexError as error:
            first = error.errors[0] if error.errors else {}
            raise StoreUnavailable(
                "lexical",
                f"{self._where} refused {len(error.errors)} chunk(s) when asked to {doing}: "
                f"{first}",
            ) from error
        except NotFoundError as error:
            if error.error != "index_not_found_exception":
                raise
            self._created = False  # made again by the next write
            raise StoreUnavailable(
                "lexical",
                f"{self._where} no longer has the index {self.index} (asked to {doing}); "
                "run 'appliance docs rebuild-stores'",
            ) from error
        except TransportError as error:
            if isinstance(error.status_code, int) and error.status_code >= 500:
                raise StoreUnavailable(
                    "lexical", f"{self._where} failed when asked to {doing} ({error})"
                ) from error
            raise

    # -- writing -------------------------------------------------------------------------

    def upsert(self, chunks: Sequence[Chunk]) -> None:
        actions = (
            {"_op_type": "index", "_index": self.index, "_id": c.chunk_id, "_source": _source(c)}
            for c in chunks
        )
        with self._reaching(f"index {len(chunks)} chunk(s)"):
            self._bulk(actions)

    def _bulk(self, actions: Iterable[dict[str, Any]], *, ignore: tuple[int, ...] = ()) -> None:
        """Sends ``actions`` in bulk requests, retried with back-off when the cluster
        pushes back; an action it refuses raises BulkIndexError (``ignore``: statuses
        that are no refusal, as 404 for a delete)."""
        for _ok, _item in helpers.streaming_bulk(
            self._client,
            actions,
            chunk_size=self._bulk_chunks,
            max_retries=self._max_retries,
            initial_backoff=1,
            max_backoff=30,
            yield_ok=False,
            ignore_status=ignore,
        ):
            pass

    def delete_documents(self, doc_ids: Sequence[str]) -> None:
        """Deletes by id the chunks a search finds for these documents: every
        distribution has bulk deletes, while delete-by-query is a module some lack."""
        if not doc_ids:
            return
        with self._reaching(f"delete {len(doc_ids)} document(s)"):
            # A search sees what is searchable: make earlier writes so first.
            self._client.indices.refresh(index=self.index)
            found = helpers.scan(
                self._client,
                index=self.index,
                query={"query": {"terms": {"doc_id": list(doc_ids)}}, "_source": False},
            )
            deletes = (
                {"_op_type": "delete", "_index": self.index, "_id": hit["_id"]} for hit in found
            )
            self._bulk(deletes, ignore=(404,))

    def commit(self) -> None:
        with self._reaching("make written chunks searchable"):
            self._client.indices.refresh(index=self.index)

    # -- reading -------------------------------------------------------------------------

    def search(
        self, query: str, limit: int, search_filter: SearchFilter | None = None
    ) -> list[ScoredChunkId]:
        text_query = self._text_query(query)
        if text_query is None or limit <= 0:
            return []
        body: dict[str, Any] = {
            "size": limit,
            "_source": False,
            "track_total_hits": False,
            "query": {"bool": {"must": [text_query], "filter": self._filters(search_filter)}},
        }
        with self._reaching("search"):
            hits = self._client.search(index=self.index, body=body)["hits"]["hits"]
        return [ScoredChunkId(hit["_id"], float(hit["_score"])) for hit in hits]

    def _text_query(self, query: str) -> dict[str, Any] | None:
        # As tantivy's query parser reads a question: query syntax is data (stripped the
        # same way), each word is matched in every text field with that field's boost and
        # the matches add up (one multi_match of most_fields), and a word the analyser
        # splits ("e11.9" -> e11, 9) must match as a phrase, so E11.9 does not find E11.65.
        words = query_words(query)[:MAX_QUERY_WORDS]
        single = [w for w in words if len(_WORD_PARTS.findall(w)) == 1]
        split = [w for w in words if len(_WORD_PARTS.findall(w)) > 1]
        should: list[dict[str, Any]] = []
        if single:
            should.append(
                {
                    "multi_match": {
                        "query": " ".join(single),
                        "type": "most_fields",
                        "operator": "or",
                        "fields": [f"{field}^{boost}" for field, boost in self._boosts.items()],
                    }
                }
            )
        should += [
            {"match_phrase": {field: {"query": word, "boost": boost}}}
            for word in split
            for field, boost in self._boosts.items()
        ]
        # The identifier analyser is a pattern and lowercase: applied here, it saves a
        # round trip per question, and the mapping holds the same pattern for the chunks.
        tokens = {t.lower() for t in _IDENTIFIER.findall(query)}
        should.extend(
            {"term": {"identifiers": {"value": token, "boost": self._identifier_boost}}}
            for token in sorted(t for t in tokens if HAS_DIGIT.search(t))
        )
        if not should:
            return None
        return {"bool": {"should": should, "minimum_should_match": 1}}

    def _filters(self, search_filter: SearchFilter | None) -> list[dict[str, Any]]:
        return [] if search_filter is None else [compile_filter(search_filter)]

    def _analyse(self, analyzer: str, text: str) -> list[str]:
        if not text.strip():
            return []
        found = self._client.indices.analyze(
            index=self.index, body={"analyzer": analyzer, "text": text}
        )
        return [token["token"] for token in found.get("tokens", [])]

    def count(self) -> int:
        with self._reaching("count chunks"):
            return int(self._client.count(index=self.index)["count"])

    def content_terms(self, text: str) -> list[str]:
        """The stemmed content words of a text, in order, each once (numbers left out),
        by the index's own analyser."""
        with self._reaching("analyse a question"):
            terms = self._analyse(_CONTENT, text)
        return [t for t in dict.fromkeys(terms) if len(t) > 1 and not t.isdigit()]

    def document_frequencies(
        self, terms: Sequence[str], search_filter: SearchFilter | None = None
    ) -> tuple[dict[str, int], int]:
        """How many chunks hold each term, and how many there are, among the chunks the
        filter admits: one request, a filter per term counted under the access filter."""
        per_term = {
            f"t{n}": {"bool": {"should": [{"term": {f: term}} for f in TEXT_FIELDS]}}
            for n, term in enumerate(terms)
        }
        body: dict[str, Any] = {
            "size": 0,
            "track_total_hits": True,
            "query": {"bool": {"filter": self._filters(search_filter)}},
        }
        if per_term:
            body["aggs"] = {"terms": {"filters": {"filters": per_term}}}
        with self._reaching("count term frequencies"):
            found = self._client.search(index=self.index, body=body)
        buckets = found.get("aggregations", {}).get("terms", {}).get("buckets", {})
        frequencies = {
            term: int(buckets.get(f"t{n}", {}).get("doc_count", 0)) for n, term in enumerate(terms)
        }
        return frequencies, int(found["hits"]["total"]["value"])

    def chunk_ids_of(self, doc_id: str) -> set[str]:
        with self._reaching("list a document's chunks"):
            return {
                hit["_id"]
                for hit in helpers.scan(
                    self._client,
                    index=self.index,
                    query={"query": {"term": {"doc_id": doc_id}}, "_source": False},
                )
            }

    def close(self) -> None:
        self._client.close()


def _source(chunk: Chunk) -> dict[str, Any]:
    meta = chunk.metadata
    headings = " / ".join(chunk.heading_path)
    return {
        "chunk_id": chunk.chunk_id,
        "doc_id": chunk.doc_id,
        "title": meta.title,
        "headings": headings,
        "body": chunk.index_text,
        "identifiers": f"{meta.title}\n{headings}\n{chunk.index_text}",
        "doc_type": meta.doc_type,
        "departments": list(meta.departments),
        "sensitivity": meta.sensitivity,
        "owner": meta.owner,
        "patient_id": meta.patient_id or NO_PATIENT,
        "effective_from": meta.effective_from.isoformat(),
        "effective_to": (meta.effective_to or OPEN_ENDED).isoformat(),
    }


def compile_filter(search_filter: SearchFilter) -> dict[str, Any]:
    """The filter language as an OpenSearch query for the filter context."""
    match search_filter:
        case AnyOf(field=name, values=values):
            return {"terms": {name: list(values)}} if values else _MATCH_NOTHING
        case ActiveOn(day=day):
            return {"bool": {"filter": _in_force(day)}}
        case AllOf(clauses=clauses):
            return {"bool": {"filter": [compile_filter(c) for c in clauses]}}
        case OneOf(clauses=clauses):
            if not clauses:
                return _MATCH_NOTHING
            return {
                "bool": {"should": [compile_filter(c) for c in clauses], "minimum_should_match": 1}
            }
        case NoneOf(clauses=clauses):
            return {"bool": {"must_not": [compile_filter(c) for c in clauses]}}
    raise TypeError(f"not a search filter: {search_filter!r}")


def _in_force(day: dt.date) -> list[dict[str, Any]]:
    """effective_from <= day < effective_to."""
    return [
        {"range": {"effective_from": {"lte": day.isoformat()}}},
        {"range": {"effective_to": {"gt": day.isoformat()}}},
    ]
