"""Builds the engines named in the settings, once per process.

Heavy parts (the embedding model, the stores) are opened on first use, so that a
command such as ``appliance docs list`` does not pay for loading a model.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import cached_property
from types import TracebackType

from appliance.access.break_glass import BreakGlassLedger
from appliance.access.guard import AccessGuard
from appliance.access.policy import PolicyStore
from appliance.access.subjects import SubjectDirectory
from appliance.access.vocabulary import Vocabulary
from appliance.answer import AnswerGates, AnswerPipeline
from appliance.audit_trail import AuditTrail
from appliance.generate.base import Generator
from appliance.generate.extractive import ExtractiveGenerator
from appliance.generate.llama_cpp_server import LlamaCppServer
from appliance.generate.openai_compatible import OpenAICompatibleGenerator
from appliance.generate.prompt import fence_key
from appliance.index.base import (
    GraphIndex,
    LexicalEngine,
    LexicalIndex,
    TermStatistics,
    VectorIndex,
)
from appliance.index.catalog import Catalog
from appliance.index.stores import open_graph, open_lexical, open_vectors
from appliance.ingest.chunker import Chunker
from appliance.ingest.parse_limits import ParseLimits
from appliance.ingest.pipeline import Ingestor
from appliance.ingest.preparation import DocumentPreparer
from appliance.model_registry import ModelRegistry
from appliance.nlp.clinical_facts import ClinicalFactExtractor, ClinicalTerms
from appliance.nlp.embedder import Embedder
from appliance.nlp.neural_coreference import COREFERENCE_ROLE, FastcorefResolver
from appliance.nlp.parse_graph import ParseGraphBuilder
from appliance.query import QueryPipeline
from appliance.rerank.stages import open_stages
from appliance.retrieve.graph import GraphRetriever
from appliance.retrieve.hybrid import HybridRetriever, RetrievalConfig, TextRetriever
from appliance.settings import AuditSettings, Settings
from appliance.understand import DocumentWords, FollowUpReader, QuestionReader, WardLanguage
from appliance.verify.base import EntailmentVerifier
from appliance.verify.citations import CitationChecker
from appliance.verify.conflicts import ConflictFinder, ExtractedStatements, GraphStatements
from appliance.verify.graph_scope import GraphExclusions
from appliance.verify.lexical import LexicalVerifier
from appliance.verify.nli import NliVerifier
from appliance.verify.scope import ScopeChecker
from audit.log import AuditLog
from audit.witness import DirectoryWitness, SyslogWitness, Witness

PRIVATE_UMASK = 0o077


def witness_of(audit: AuditSettings) -> Witness | None:
    """The witness the site configured for the log's checkpoints, if any."""
    if audit.witness_dir is not None:
        return DirectoryWitness(audit.witness_dir)
    if audit.witness_syslog:
        host, _, port = audit.witness_syslog.partition(":")
        return SyslogWitness(host, int(port or 514), audit.witness_syslog_tcp)
    return None


class Appliance:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        # Everything the appliance writes (catalog with restricted text, audit entries,
        # the break-the-glass ledger, uploads) is its own account's alone, whatever umask
        # the process was started with.
        os.umask(PRIVATE_UMASK)
        settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        if settings.data_dir.stat().st_uid == os.getuid():
            settings.data_dir.chmod(0o700)

    def __enter__(self) -> Appliance:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    @cached_property
    def registry(self) -> ModelRegistry:
        return ModelRegistry(self.settings)

    @cached_property
    def catalog(self) -> Catalog:
        return Catalog(self.settings.catalog_path)

    @cached_property
    def embedder(self) -> Embedder:
        model = self.registry.load(self.settings.embedder_role)
        return Embedder(
            model,
            batch_size=self.settings.embed_batch_size,
            precision=self.settings.embed_precision,
        )

    @cached_property
    def _lexical_engine(self) -> LexicalEngine:
        return open_lexical(self.settings)

    @property
    def lexical(self) -> LexicalIndex:
        return self._lexical_engine

    @property
    def term_statistics(self) -> TermStatistics:
        """The lexical engine's own analysis and counts, for the question-coverage gate."""
        return self._lexical_engine

    @cached_property
    def vectors(self) -> VectorIndex:
        return open_vectors(self.settings, self.embedder.dimension)

    @cached_property
    def knowledge_graph(self) -> GraphIndex | None:
        """The graph store of ``graph.engine`` (the embedded server starts here)."""
        return open_graph(self.settings)

    @cached_property
    def clinical_terms(self) -> ClinicalTerms:
        """The reviewed clinical vocabulary: the graph's entities, and the drugs the answer
        path reads in questions and sentences."""
        return ClinicalTerms.load()

    @cached_property
    def fact_extractor(self) -> ClinicalFactExtractor:
        return ClinicalFactExtractor(self.registry.load("spacy-vectors"), self.clinical_terms)

    @cached_property
    def preparer(self) -> DocumentPreparer:
        """Ingestion's reading and computing: models and the catalog, no store (so that
        another process can run it beside the one that holds the stores)."""
        return DocumentPreparer(
            self.catalog,
            self.embedder,
            chunker=Chunker(self.settings.limits.max_chunk_chars),
            max_file_bytes=self.settings.limits.max_file_bytes,
            parse_limits=ParseLimits(
                max_unpacked_bytes=self.settings.limits.max_unpacked_bytes,
                max_pages=self.settings.limits.max_pages,
                max_blocks=self.settings.limits.max_blocks,
                max_text_chars=self.settings.limits.max_text_chars,
                max_seconds=self.settings.limits.max_seconds,
            ),
            batch_documents=self.settings.ingest_batch_documents,
            embedder_name=self.registry.manifest(self.settings.embedder_role).name,
            graph_builder=self.graph_builder,
            fact_extractor=None if self.settings.graph.engine == "none" else self.fact_extractor,
        )

    @cached_property
    def ingestor(self) -> Ingestor:
        return Ingestor(
            self.catalog,
            self.lexical,
            self.vectors,
            self.preparer,
            graph=self.knowledge_graph,
            trail=self.audit_trail,
        )

    @cached_property
    def graph_builder(self) -> ParseGraphBuilder | None:
        """Parse graphs are built at ingestion only when CAGE will use them."""
        if not self.settings.rerank.cage:
            return None
        resolver = None  # the rule-based default
        if self.registry.has(COREFERENCE_ROLE):
            manifest = self.registry.manifest(COREFERENCE_ROLE)
            resolver = FastcorefResolver(self.registry.load(COREFERENCE_ROLE), manifest.name)
        return ParseGraphBuilder(self.registry.load("spacy-vectors"), resolver)

    @cached_property
    def query(self) -> QueryPipeline:
        """Retrieve, fuse, screen, then the rerank stages in order: the cross-encoder
        when a model fills its role, then CAGE (and, with the knowledge graph, the floor
        under its first passage)."""
        stages = open_stages(
            self.settings.rerank,
            self.registry,
            self.catalog,
            self.vectors,
            knowledge_graph=self.settings.graph.engine != "none",
        )
        return QueryPipeline(self.retriever, self.guard, stages, self.audit_trail)

    def pipeline(self) -> dict[str, object]:
        """Everything that ranks and gates an answer, as data: each question and answer
        record carries it with its hash (``AuditTrail``)."""
        retrieval = self.settings.retrieval
        return {
            **self.query.to_dict(),
            "lexical_boosts": {
                "title": retrieval.title_boost,
                "headings": retrieval.heading_boost,
                "identifiers": retrieval.identifier_boost,
            },
            "embedder": self.registry.manifest(self.settings.embedder_role).name,
            "answer_gates": self.answer_gates.to_dict(),
        }

    @cached_property
    def generator(self) -> Generator:
        """The configured generator; for ``llama-cpp`` the appliance starts (and, on
        close, stops) a llama.cpp server on loopback with the registry's GGUF model."""
        settings = self.settings.generator
        if settings.kind == "extractive":
            return ExtractiveGenerator(self.embedder, drugs_named=self.clinical_terms.drugs_named)
        if settings.kind == "llama-cpp":
            model_path = self.registry.load(settings.model_role)
            server = LlamaCppServer(
                model_path,
                alias=settings.model_role,
                context_tokens=settings.context_tokens,
                threads=settings.threads,
                log_path=self.settings.data_dir / "llama-cpp-server.log",
            )
            server.start()
            return OpenAICompatibleGenerator(
                server.base_url,
                settings.model_role,
                structured_output="gbnf",
                quotes=settings.quotes,
                framing=settings.framing,
                max_tokens=settings.max_tokens,
                timeout_s=settings.timeout_s,
                name=f"llama-cpp:{self.registry.manifest(settings.model_role).name}",
                server=server,
                fence_key=fence_key(self.settings.data_dir),
            )
        return OpenAICompatibleGenerator(
            settings.server_url,
            settings.served_model,
            structured_output=settings.structured_output,
            quotes=settings.quotes,
            framing=settings.framing,
            max_tokens=settings.max_tokens,
            timeout_s=settings.timeout_s,
            api_key=os.environ.get(settings.api_key_env) or None,
            name=f"openai:{settings.served_model}",
            fence_key=fence_key(self.settings.data_dir),
        )

    @cached_property
    def answers(self) -> AnswerPipeline:
        """Questions to verified, cited answers: the configured generator (extractive by
        default) and the NLI verifier, or the lexical fallback until one is installed."""
        return AnswerPipeline(
            self.query, self.guard, self.generator, self.verifier, self.answer_gates,
            self.audit_trail, reader=self.question_reader,
            citations=CitationChecker(self.verifier, self.scope_checker),
            conflicts=self.conflict_finder,
        )  # fmt: skip

    @cached_property
    def answer_gates(self) -> AnswerGates:
        settings = self.settings.answer
        return AnswerGates(
            self.query, self.vectors, self.term_statistics, self.embedder, self.scope_checker,
            relevance_floor=settings.relevance_floor,
            min_question_coverage=settings.min_question_coverage,
            context_passages=settings.context_passages,
            drugs_named=self.clinical_terms.drugs_named,
        )  # fmt: skip

    @cached_property
    def question_reader(self) -> QuestionReader:
        """Reads ward phrasing with the reviewed ward language and the words of the
        documents every reader may see (public and internal ones)."""
        catalog = self.catalog

        def shared_texts() -> tuple[object, Iterator[str]]:
            records = [
                r for r in catalog.documents()
                if r.state == "indexed" and r.metadata.sensitivity in ("public", "internal")
            ]  # fmt: skip
            key = tuple((r.metadata.doc_id, r.fingerprint, r.source_sha256) for r in records)
            texts = (  # read only when the documents changed
                f"{r.metadata.title}\n{catalog.document_text(r.metadata.doc_id) or ''}"
                for r in records
            )
            return key, texts

        language = WardLanguage.load(self.settings.ward_language)
        # The fact finder's parser is loaded by the first follow-up, not before.
        follow_ups = FollowUpReader(lambda text: self.fact_extractor.question_keys(text, {}))
        return QuestionReader(language, DocumentWords(shared_texts), follow_ups)

    @cached_property
    def scope_checker(self) -> ScopeChecker:
        """Scope from the documents' text; with a knowledge graph, also the exclusions
        it read at ingestion, matched to the question's entities."""
        if self.knowledge_graph is None:
            return ScopeChecker(self.catalog.document_text)
        exclusions = GraphExclusions(
            self.knowledge_graph, self.fact_extractor, self.catalog.chunk_ids_of
        )
        return ScopeChecker(self.catalog.document_text, exclusions.named_by)

    @cached_property
    def conflict_finder(self) -> ConflictFinder:
        """What the answer's passages state, from the knowledge graph when one runs,
        else read from the passages: sources that disagree are shown together."""
        if self.knowledge_graph is None:
            return ConflictFinder(ExtractedStatements(self.fact_extractor))
        return ConflictFinder(GraphStatements(self.knowledge_graph))

    @cached_property
    def verifier(self) -> EntailmentVerifier:
        """The NLI model in the role "verifier" when one is installed, else the lexical
        fallback (which every answer then names)."""
        if not self.registry.has("verifier"):
            return LexicalVerifier()
        manifest = self.registry.manifest("verifier")
        threshold = manifest.threshold if manifest.threshold is not None else 0.5
        return NliVerifier(self.registry.load("verifier"), manifest.name, threshold)

    @cached_property
    def audit_log(self) -> AuditLog:
        audit = self.settings.audit
        return AuditLog(
            self.settings.audit_dir,
            checkpoint_every=audit.checkpoint_every,
            checkpoint_seconds=audit.checkpoint_seconds,
            witness=witness_of(audit),
        )

    @cached_property
    def audit_trail(self) -> AuditTrail:
        # The models of the question path; the answer record names its generator and
        # verifier itself (an installed LLM is not necessarily the one in use).
        models = {m.role: m.name for m in self.registry.manifests() if m.kind != "gguf"}
        return AuditTrail(self.audit_log, models, self.pipeline)

    @cached_property
    def policy(self) -> PolicyStore:
        access = self.settings.access_dir
        return PolicyStore(
            self.settings.policy_model,
            access / "policy.csv",
            self.settings.shipped_policy,
            self.audit_trail,
        )

    @cached_property
    def break_glass(self) -> BreakGlassLedger:
        return BreakGlassLedger(self.settings.access_dir / "break_glass.sqlite3", self.audit_trail)

    @cached_property
    def guard(self) -> AccessGuard:
        return AccessGuard(self.policy, self.break_glass, self.catalog, self.audit_trail)

    @cached_property
    def subjects(self) -> SubjectDirectory:
        return SubjectDirectory(self.settings.access_dir / "subjects.toml", self.audit_trail)

    def store_counts(self) -> dict[str, int]:
        """The chunks each store holds, to compare with what the catalog vouches for."""
        counts = {"lexical": self.lexical.count(), "vectors": self.vectors.count()}
        if self.knowledge_graph is not None:
            counts["graph"] = self.knowledge_graph.count()
        return counts

    def stores_behind(self) -> dict[str, int]:
        """The stores that do not hold the chunks the catalog vouches for, with what
        they hold (none: every store agrees with the catalog)."""
        vouched = self.catalog.chunk_count()
        return {store: n for store, n in self.store_counts().items() if n != vouched}

    def vocabulary(self) -> Vocabulary:
        """The roles and departments the site has now (policy, users, documents): what a
        change to the users or the policy may name without saying it is new."""
        labels = [d for r in self.catalog.documents() for d in r.metadata.departments]
        return Vocabulary.of(self.policy.current(), self.subjects.subjects().values(), labels)

    @cached_property
    def retriever(self) -> HybridRetriever:
        retrieval = self.settings.retrieval
        text_retrievers: list[TextRetriever] = [self.lexical]
        if self.knowledge_graph is not None:
            text_retrievers.append(
                GraphRetriever(
                    self.knowledge_graph, self.fact_extractor, self.settings.graph.candidates
                )
            )
        return HybridRetriever(
            self.catalog,
            text_retrievers,
            self.vectors,
            self.embedder,
            RetrievalConfig(
                rrf_k=retrieval.rrf_k,
                candidates_per_retriever=retrieval.candidates_per_retriever,
                max_query_chars=self.settings.limits.max_query_chars,
            ),
        )

    def close(self) -> None:
        for name in (
            "generator",
            "retriever",
            "_lexical_engine",
            "vectors",
            "knowledge_graph",
            "catalog",
            "break_glass",
            "audit_log",
        ):
            if name in self.__dict__ and (store := self.__dict__.pop(name)) is not None:
                store.close()
