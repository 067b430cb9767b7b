"""Opens the stores the settings name. The rest of the appliance sees only the
interfaces of ``index.base``; this is the one place that knows the concrete engines.

The embedded engines (tantivy, qdrant-edge) keep their files in the data directory and
admit one process at a time; the servers (OpenSearch, Qdrant) are reached with the
credentials of their settings group, read when the connection opens.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from appliance.index.base import STORE_LAYOUT_VERSION, GraphIndex, LexicalEngine, VectorIndex
from appliance.settings import Neo4jSettings, OpenSearchSettings, QdrantSettings, Settings

if TYPE_CHECKING:
    from neo4j import Driver
    from opensearchpy import OpenSearch
    from qdrant_client import QdrantClient


def lexical_dir(data_dir: Path) -> Path:
    """The embedded BM25 index (tantivy), versioned with the store layout."""
    return data_dir / f"lexical-v{STORE_LAYOUT_VERSION}"


def vector_dir(data_dir: Path) -> Path:
    """The embedded vector store (qdrant-edge), versioned with the store layout."""
    return data_dir / f"vectors-v{STORE_LAYOUT_VERSION}"


def qdrant_local_dir(data_dir: Path) -> Path:
    """qdrant-client's local mode, when ``vectors.engine`` is ``qdrant`` with no URL."""
    return data_dir / f"qdrant-local-v{STORE_LAYOUT_VERSION}"


def graph_dir(data_dir: Path) -> Path:
    """The embedded graph server's files (ArcadeDB), versioned with the store layout."""
    return data_dir / f"graph-v{STORE_LAYOUT_VERSION}"


def open_lexical(settings: Settings) -> LexicalEngine:
    """The BM25 store of ``lexical.engine``."""
    retrieval = settings.retrieval
    boosts: dict[str, Any] = {
        "title_boost": retrieval.title_boost,
        "heading_boost": retrieval.heading_boost,
        "identifier_boost": retrieval.identifier_boost,
    }
    if settings.lexical.engine == "opensearch":
        from appliance.index.opensearch_lexical import OpenSearchLexicalIndex

        server = settings.lexical.opensearch
        return OpenSearchLexicalIndex(
            opensearch_client(server),
            index_prefix=server.index_prefix,
            where=f"OpenSearch at {server.url}",
            bulk_chunks=server.bulk_chunks,
            max_retries=server.max_retries,
            shards=server.shards,
            replicas=server.replicas,
            **boosts,
        )
    from appliance.index.tantivy_lexical import TantivyLexicalIndex

    return TantivyLexicalIndex(lexical_dir(settings.data_dir), **boosts)


def open_vectors(settings: Settings, dimension: int) -> VectorIndex:
    """The vector store of ``vectors.engine``, for vectors of ``dimension``."""
    if settings.vectors.engine == "qdrant":
        from appliance.index.qdrant_vectors import QdrantVectorIndex

        server = settings.vectors.qdrant
        where = f"Qdrant at {server.url}" if server.url else "Qdrant (local mode)"
        return QdrantVectorIndex(
            qdrant_client(server, qdrant_local_dir(settings.data_dir)),
            dimension,
            collection_prefix=server.collection_prefix,
            where=where,
            payload_indexes=server.url is not None,  # local mode has none
        )
    from appliance.index.qdrant_edge_vectors import QdrantEdgeVectorIndex

    return QdrantEdgeVectorIndex(vector_dir(settings.data_dir), dimension)


def opensearch_client(server: OpenSearchSettings) -> OpenSearch:
    """A client for the cluster, with TLS and sign-in as the settings say."""
    from opensearchpy import OpenSearch

    secret = server.secret()
    https = urlsplit(server.url).scheme == "https"
    return OpenSearch(
        hosts=[server.url],
        http_auth=(server.user, secret) if server.user and secret is not None else None,
        use_ssl=https,
        verify_certs=https,
        ca_certs=str(server.ca_file) if server.ca_file else None,
        ssl_show_warn=False,
        timeout=server.timeout_s,
        max_retries=0,
        retry_on_timeout=False,
        http_compress=True,
    )


def qdrant_client(server: QdrantSettings, local_dir: Path) -> QdrantClient:
    """A client for the server, or qdrant-client's local mode in ``local_dir``."""
    from qdrant_client import QdrantClient

    if server.url is None:
        local_dir.mkdir(parents=True, exist_ok=True)
        return QdrantClient(path=str(local_dir))
    https = urlsplit(server.url).scheme == "https"
    return QdrantClient(
        url=server.url,
        api_key=server.secret(),
        https=https,
        verify=str(server.ca_file) if (https and server.ca_file) else https,
        timeout=int(server.timeout_s),
    )


def single_process_reason(settings: Settings) -> str | None:
    """Why the configured stores admit one process only, if they do (the embedded ones)."""
    if settings.lexical.engine == "tantivy":
        return "the embedded BM25 index (tantivy) admits one process; set lexical.engine"
    if settings.vectors.engine == "qdrant-edge":
        return "the embedded vector store (qdrant-edge) admits one process; set vectors.engine"
    if settings.vectors.qdrant.url is None:
        return "qdrant-client's local mode admits one process; set vectors.qdrant.url"
    if settings.graph.engine == "arcadedb":
        return "the embedded graph server (ArcadeDB) admits one process; set graph.engine"
    return None


def open_graph(settings: Settings) -> GraphIndex | None:
    """The knowledge graph of ``graph.engine`` (None when there is none); for
    ``arcadedb`` the embedded server is started here and stops when the store closes."""
    from appliance.index.cypher_graph import CypherGraphStore

    graph = settings.graph
    if graph.engine == "none":
        return None
    if graph.engine == "neo4j":
        return CypherGraphStore(
            neo4j_driver(graph.neo4j), graph.neo4j.database, where=f"Neo4j at {graph.neo4j.url}"
        )
    from neo4j import GraphDatabase

    from appliance.index.arcadedb_server import DATABASE, USER, ArcadeDbServer

    server = ArcadeDbServer(
        graph_dir(settings.data_dir),
        heap_mb=graph.arcadedb.heap_mb,
        start_timeout_s=graph.arcadedb.start_timeout_s,
    ).start()
    driver = GraphDatabase.driver(server.url, auth=(USER, server.password()))
    return CypherGraphStore(driver, DATABASE, where="the embedded ArcadeDB", server=server)


def neo4j_driver(server: Neo4jSettings) -> Driver:
    """A driver for the Neo4j server, with TLS and sign-in as the settings say."""
    from neo4j import GraphDatabase, TrustCustomCAs

    secret = server.secret()
    options: dict[str, Any] = {"connection_timeout": server.timeout_s}
    if server.ca_file is not None:  # the site's CA: the driver wants a plain scheme then
        if urlsplit(server.url).scheme.endswith("+s"):
            raise ValueError(
                f"graph.neo4j.url {server.url} trusts the system's CAs; with ca_file set, "
                "write it as bolt:// or neo4j:// (TLS is then required with that CA)"
            )
        options["encrypted"] = True
        options["trusted_certificates"] = TrustCustomCAs(str(server.ca_file))
    auth = (server.user, secret) if server.user and secret is not None else None
    return GraphDatabase.driver(server.url, auth=auth, **options)
