"""Clinical question-answering appliance: the core library.

The two paths of DESIGN.md, one folder per stage. The document path: ``ingest`` (parse,
chunk, metadata, the catalog), ``nlp`` (embeddings, parse graphs, coreference), ``index``
(the stores). The question path: ``understand`` (ward phrasing), ``retrieve`` (hybrid
search and fusion, driven by ``query``), ``access`` (who may read what, at query and
answer time), ``rerank`` (the cross-encoder and CAGE stages), ``answer`` (the gates and
the path as named steps), ``generate``, ``verify`` (citations, scope, entailment), and
``audit_trail`` (every record the appliance writes). Around them: ``engines`` (the one
composition root), ``settings``, ``model_registry``, ``eval`` (the release gate), ``cli``
(the ``appliance`` command) and ``training`` (the site's own models; neither path
imports it).
"""

__version__ = "0.1.0"

import os as _os

# Offline only: no model, tokenizer or dataset may ever be fetched from a hub. Set
# before anything imports huggingface_hub or transformers, which read these at import.
_os.environ["HF_HUB_OFFLINE"] = "1"
_os.environ["TRANSFORMERS_OFFLINE"] = "1"
_os.environ["HF_DATASETS_OFFLINE"] = "1"
_os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
