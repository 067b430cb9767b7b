"""One settings object for the whole appliance.

Read from the environment (prefix ``APPLIANCE_``) and, optionally, from a TOML file
named by ``APPLIANCE_CONFIG``. The embedded defaults need no configuration at all.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def _default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "clinical-appliance"


class _Group(BaseModel):
    """A group of settings: an unknown name is an error (a misspelt setting must not be
    silently ignored), and each field's docstring is its description."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class Limits(_Group):
    """Bounds that protect the appliance from oversized or pathological input."""

    max_file_bytes: int = Field(50 * 1024 * 1024, gt=0)
    """The largest document file ingested; a larger one is refused, naming this setting."""
    max_chunk_chars: int = Field(1000, ge=200)
    """The longest passage a chunk holds; longer sections are cut at sentence ends."""
    max_query_chars: int = Field(2000, gt=0)
    """The longest question accepted."""
    max_unpacked_bytes: int = Field(64 * 1024 * 1024, gt=0)
    """What an Office file may unpack to (a small zip can hold gigabytes of XML)."""
    max_pages: int = Field(2_000, gt=0)
    """Pages of one PDF."""
    max_blocks: int = Field(50_000, gt=0)
    """Paragraphs, headings, list items and tables of one document."""
    max_text_chars: int = Field(5_000_000, gt=0)
    """Characters of text one document may hold once read."""
    max_seconds: float = Field(120.0, gt=0)
    """Reading one document (parsing, before chunking and embedding)."""


class RetrievalSettings(_Group):
    """How many candidates each retriever returns and how they are fused."""

    rrf_k: int = Field(60, gt=0)
    """Reciprocal rank fusion's k: score = sum over retrievers of 1 / (k + rank)."""
    candidates_per_retriever: int = Field(50, gt=0)
    """How deep each retriever ranks before fusion."""
    title_boost: float = Field(2.0, gt=0)
    """BM25 weight of a match in the document title."""
    heading_boost: float = Field(1.5, gt=0)
    """BM25 weight of a match in the section headings."""
    identifier_boost: float = Field(3.0, gt=0)
    """BM25 weight of an exact code or identifier (E11.9, a drug code)."""


class ServerCredentials(_Group):
    """How the appliance signs in to a store server. The secret itself never sits in the
    settings: it is read, when the connection opens, from a file (a mounted secret) or an
    environment variable."""

    user: str | None = None
    """The account the appliance signs in as (None: no sign-in)."""
    password_file: Path | None = None
    """A file whose first line is the password (or API key)."""
    password_env: str | None = None
    """An environment variable that holds the password (or API key)."""
    ca_file: Path | None = None
    """The certificate authority that signed the server's TLS certificate (for https)."""

    def secret(self) -> str | None:
        """The password or key, read now; a clear error when it is named but missing."""
        if self.password_file is not None:
            try:
                return self.password_file.read_text(encoding="utf-8").splitlines()[0].strip()
            except (OSError, IndexError) as error:
                raise ValueError(
                    f"the store password file {self.password_file} cannot be read or is "
                    f"empty ({error or 'no first line'}); fix the file or the setting"
                ) from error
        if self.password_env is not None:
            value = os.environ.get(self.password_env)
            if not value:
                raise ValueError(
                    f"the store password is to come from ${self.password_env}, which is "
                    "not set; set it or change password_env"
                )
            return value
        return None


class OpenSearchSettings(ServerCredentials):
    """The OpenSearch cluster that holds the lexical index when ``lexical.engine`` is
    ``opensearch``."""

    url: str = "http://127.0.0.1:9200"
    """The cluster's address (https with ``ca_file`` on a production host)."""
    index_prefix: str = Field("appliance", pattern=r"^[a-z0-9][a-z0-9_-]*$")
    """Index names start with this, so that several appliances can share a cluster."""
    timeout_s: float = Field(10.0, gt=0)
    """How long one request may take before the store counts as down."""
    bulk_chunks: int = Field(500, gt=0)
    """Chunks sent per bulk request at ingestion."""
    max_retries: int = Field(3, ge=0)
    """Retries of a bulk request the cluster pushed back on (HTTP 429), with back-off."""
    shards: int = Field(1, gt=0)
    """Primary shards of a new index (set before the first ingestion)."""
    replicas: int = Field(0, ge=0)
    """Replicas of each shard (0 on a single node; 1 or more on a cluster)."""


class QdrantSettings(ServerCredentials):
    """The Qdrant server that holds the vectors when ``vectors.engine`` is ``qdrant``."""

    url: str | None = None
    """The server's address; None runs qdrant-client's local mode in the data directory
    (the same API without a server, used by the test suite)."""
    collection_prefix: str = Field("appliance", pattern=r"^[a-z0-9][a-z0-9_-]*$")
    """Collection names start with this."""
    timeout_s: float = Field(10.0, gt=0)
    """How long one request may take before the store counts as down."""


class LexicalSettings(_Group):
    """Which engine holds the BM25 index."""

    engine: Literal["tantivy", "opensearch"] = "tantivy"
    """``tantivy``: embedded in the process, in the data directory (the default);
    ``opensearch``: an OpenSearch cluster."""
    opensearch: OpenSearchSettings = Field(default_factory=OpenSearchSettings)


class VectorSettings(_Group):
    """Which engine holds the chunk embeddings."""

    engine: Literal["qdrant-edge", "qdrant"] = "qdrant-edge"
    """``qdrant-edge``: the Qdrant engine embedded in the process (the default);
    ``qdrant``: a Qdrant server through qdrant-client."""
    qdrant: QdrantSettings = Field(default_factory=QdrantSettings)


class Neo4jSettings(ServerCredentials):
    """The Neo4j server that holds the knowledge graph when ``graph.engine`` is ``neo4j``."""

    url: str = "bolt://127.0.0.1:7687"
    """The server's Bolt address (``bolt+s://`` with ``ca_file`` on a production host)."""
    database: str = Field("neo4j", pattern=r"^[a-z0-9][a-z0-9.-]*$")
    """The database that holds the appliance's graph."""
    timeout_s: float = Field(10.0, gt=0)
    """How long one query may take before the store counts as down."""


class ArcadeDbSettings(_Group):
    """The graph server the appliance starts itself when ``graph.engine`` is
    ``arcadedb``: ArcadeDB from its Python wheel (with its own Java runtime), a child
    process bound to loopback, its files and password in the data directory."""

    heap_mb: int = Field(384, ge=128)
    """The Java heap of the child process."""
    start_timeout_s: float = Field(60.0, gt=0)
    """How long the server may take to start before the appliance gives up."""


class GraphSettings(_Group):
    """Which engine holds the knowledge graph (entities and dated relations of chunks),
    the third retriever of the fusion."""

    engine: Literal["none", "arcadedb", "neo4j"] = "arcadedb"
    """``arcadedb`` (the default): an embedded Bolt server the appliance starts, one
    process per data directory; ``neo4j``: a Neo4j server (for several workers);
    ``none``: no graph (retrieval fuses BM25 and vectors)."""
    arcadedb: ArcadeDbSettings = Field(default_factory=ArcadeDbSettings)
    neo4j: Neo4jSettings = Field(default_factory=Neo4jSettings)
    candidates: int = Field(10, gt=0)
    """Chunks the graph retriever hands to the fusion, at most: its evidence is precise
    or absent, and a long tail would only dilute the other rankings."""


class RerankSettings(_Group):
    """Which rerank stages run after fusion, and how."""

    cross_encoder: bool = True
    """Rerank with the cross-encoder, when a model fills ``cross_encoder_role``."""
    cross_encoder_role: str = "reranker"
    """The model registry role of the cross-encoder."""
    cross_encoder_candidates: int = Field(20, ge=1)
    """How many fused candidates the cross-encoder rescores."""
    cage: bool = True
    """Rerank with CAGE (parse graphs are then built at ingestion)."""
    cage_candidates: int = Field(10, ge=2)
    """How many top candidates CAGE reorders."""
    cage_alpha: float = Field(0.7, ge=0.0, le=1.0)
    """CAGE's weight of relevance against coherence (1: relevance only)."""
    cage_epochs: int = Field(30, ge=1)
    """CAGE's training epochs per question."""
    cage_seed: int = 13
    """CAGE's random seed: the same question gives the same order."""
    chain: bool = False
    """After CAGE, the title-and-entity chain: a passage that a strong passage leads to (by
    its document's title, or a name the question does not use) comes up behind it."""
    chain_candidates: int = Field(10, ge=2)
    """How many top candidates the chain reorders."""
    chain_weight: float = Field(0.55, ge=0.0)
    """How much a link from a chosen passage lends (0.55: best on the training pools)."""
    graph_evidence: bool = True
    """Last, when the knowledge graph runs: the passage it ranked first keeps at least the
    place fusion gave it (the stages before read no negation or scope, the graph does)."""


class AnswerSettings(_Group):
    """When the answer path refuses, and how much it reads."""

    relevance_floor: float = Field(0.42, ge=-1, le=1)
    """Below this cosine between question and best passage the documents do not answer."""
    min_question_coverage: float = Field(0.5, ge=0, le=1)
    """The share of the question's content-word weight (rarer words weigh more) that the
    passages must contain; below it the documents are about something else."""
    context_passages: int = Field(5, gt=0, le=20)
    """How many ranked passages the generator is given."""


class GeneratorSettings(_Group):
    """Which generator writes answers. ``extractive`` needs no LLM (the CPU default);
    ``llama-cpp`` starts a local llama.cpp server with the GGUF model in ``model_role``;
    ``openai`` talks to a running OpenAI-compatible server (vLLM on a GPU host)."""

    kind: Literal["extractive", "llama-cpp", "openai"] = "extractive"
    """Which generator writes answers."""
    model_role: str = "llm-small"
    """The registry role of the GGUF model ``llama-cpp`` serves."""
    server_url: str = "http://127.0.0.1:8000/v1"
    """The OpenAI-compatible server ``openai`` asks (vLLM's default address)."""
    served_model: str = "clinical-llama"
    """The model name that server serves."""
    structured_output: Literal["json_schema", "json_object", "gbnf"] = "json_schema"
    """How the ``openai`` generator holds the answer to its schema: ``json_schema``
    (vLLM), ``json_object`` (a llama-cpp-python server compiling the schema) or ``gbnf``
    (the grammar compiled by the appliance; what ``llama-cpp`` always uses)."""
    quotes: Literal["quoted", "verbatim", "free"] = "quoted"
    """``quoted``: each claim is one of its passage's sentences or table rows, quoted
    whole and cited, so the model chooses what to say and writes nothing the passage does
    not (what the fine-tuning teaches; a small model's own sentences seldom follow from
    its quote); ``verbatim``: decoding holds each quote to such a sentence and the model
    writes the claim; ``free``: any text (checked only afterwards)."""
    framing: bool = False
    """Whether an answer may hold uncited framing sentences ("In summary:"). They are
    shown only beside a verified claim; offered them, a small model writes its whole
    answer there, uncited, and the clinician gets a refusal."""
    api_key_env: str = "APPLIANCE_LLM_API_KEY"
    """The environment variable that holds the server's API key, if it wants one."""
    max_tokens: int = Field(768, gt=0, le=8192)
    """The longest answer generated, in tokens."""
    timeout_s: float = Field(300.0, gt=0)
    """How long one generation may take before it is an error."""
    context_tokens: int = Field(4096, ge=512)
    """The llama.cpp server's context window."""
    threads: int | None = Field(None, gt=0)
    """The llama.cpp server's threads (None: as many as cores)."""


class ServiceSettings(_Group):
    """The web services (``appliance-web serve``)."""

    host: str = "127.0.0.1"
    """The address the web service listens on (loopback: put a TLS proxy in front)."""
    port: int = Field(8080, gt=0, lt=65536)
    """The port the web service listens on."""
    workers: int = Field(1, ge=1, le=64)
    """Worker processes answering at once. More than one needs the store servers
    (``lexical.engine = "opensearch"``, ``vectors.engine = "qdrant"`` with a URL): the
    embedded stores admit one process. Sessions, sign-in limits and jobs are shared
    through the data directory."""
    log_format: Literal["text", "json"] = "text"
    """``json``: one JSON object a line (time, level, logger, message, request id) for
    the site's log collector."""
    warm_up: bool = True
    """Load and run every model once when the service starts; ``/ready`` says "warming
    up" until that is done, so the first question after a restart is not the slow one."""
    secure_cookies: bool = True
    """Session and CSRF cookies only over HTTPS (browsers treat localhost as secure)."""
    session_hours: float = Field(8.0, gt=0, le=24)
    """How long a signed-in session lasts."""
    jwks_file: Path | None = None
    """The identity provider's signing keys (a JWKS file): bearer tokens are checked
    against it, with no network fetch. None: bearer tokens are refused."""
    jwt_issuer: str | None = None
    """The ``iss`` a bearer token must carry."""
    jwt_audience: str | None = None
    """The ``aud`` a bearer token must carry."""
    max_request_bytes: int = Field(64 * 1024, gt=0)
    """Any request body but an upload."""
    max_upload_bytes: int = Field(50 * 1024 * 1024, gt=0)
    """One upload of documents, all files together."""
    login_per_minute: int = Field(10, gt=0)
    """Failed sign-ins a minute, per address and per account."""
    ask_per_minute: int = Field(120, gt=0)
    """Questions a minute, per user."""
    trusted_proxies: list[str] = []
    """Addresses of reverse proxies whose X-Forwarded-For is believed. Empty: the peer's
    own address counts (a client cannot choose its address by a header)."""
    operations_addresses: list[str] = ["127.0.0.1", "::1"]
    """Who may read /metrics and /ready (the scraper's and the load balancer's address)."""
    operations_token_file: Path | None = None
    """A file holding a bearer token that also opens /metrics and /ready."""


class AuditSettings(_Group):
    """When the audit log signs checkpoints, and who witnesses them."""

    checkpoint_every: int = Field(1000, gt=0)
    """Sign a checkpoint at least every this many entries ..."""
    checkpoint_seconds: float = Field(60.0, gt=0)
    """... and at least this often while entries arrive."""
    break_glass_review_days: int = Field(3, gt=0)
    """An emergency access not reviewed this many days after it opened is an alert in
    the compliance report."""
    witness_dir: Path | None = None
    """A directory on another mount or host that receives every checkpoint as it is made
    (``audit verify --witness``): cutting the end off the log then shows."""
    witness_syslog: str | None = None
    """``host:port`` of the site's syslog collector, which receives every checkpoint."""
    witness_syslog_tcp: bool = False
    """Send to the syslog collector over TCP instead of UDP."""


class Settings(BaseSettings):
    """Everything an operator may set; nested values use ``__`` in env names."""

    model_config = SettingsConfigDict(
        env_prefix="APPLIANCE_",
        env_nested_delimiter="__",
        extra="forbid",
        use_attribute_docstrings=True,
    )

    data_dir: Path = Field(default_factory=_default_data_dir)
    """Everything the appliance writes: stores, catalog, audit log, access, site models
    (default ``$XDG_DATA_HOME/clinical-appliance``)."""
    models_dir: Path = PROJECT_ROOT / "models"
    """The shipped model manifests (and the models the repository carries)."""
    policy_model: Path = PROJECT_ROOT / "policies" / "model.conf"
    """The Casbin model of the access policy."""
    shipped_policy: Path = PROJECT_ROOT / "policies" / "policy.csv"
    """Copied into the data directory on first use; the site edits its copy."""
    ward_language: Path = PROJECT_ROOT / "policies" / "ward-language.toml"
    """Reviewed ward shorthand and protected drug stems (the question reader's data)."""
    local_model_dir: Path | None = None
    """Where a site's model bundle was unpacked (models not installed as packages)."""
    embedder_role: str = "embedder"
    """The registry role of the sentence embedder."""
    embed_batch_size: int = Field(16, gt=0)
    """Passages embedded per batch at ingestion."""
    embed_precision: Literal["auto", "float32", "bfloat16"] = "auto"
    """``auto``: bfloat16 where the CPU computes it natively, else float32."""
    ingest_batch_documents: int = Field(32, gt=0)
    """Documents written to the stores per commit."""
    limits: Limits = Field(default_factory=Limits)
    lexical: LexicalSettings = Field(default_factory=LexicalSettings)
    vectors: VectorSettings = Field(default_factory=VectorSettings)
    graph: GraphSettings = Field(default_factory=GraphSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    rerank: RerankSettings = Field(default_factory=RerankSettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)
    answer: AnswerSettings = Field(default_factory=AnswerSettings)
    generator: GeneratorSettings = Field(default_factory=GeneratorSettings)
    services: ServiceSettings = Field(default_factory=ServiceSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        config_file = os.environ.get("APPLIANCE_CONFIG")
        if config_file:
            path = Path(config_file)
            if not path.is_file():
                raise FileNotFoundError(
                    f"APPLIANCE_CONFIG names {path}, which does not exist; "
                    "unset it or point it at a TOML settings file"
                )
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        return tuple(sources)

    @property
    def catalog_path(self) -> Path:
        return self.data_dir / "catalog.sqlite3"

    @property
    def audit_dir(self) -> Path:
        """The audit log: entries, signed checkpoints, the signing key, its index."""
        return self.data_dir / "audit"

    @property
    def access_dir(self) -> Path:
        """The site's policy, its local users, the break-the-glass ledger, access events."""
        return self.data_dir / "access"
