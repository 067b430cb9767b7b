"""Clinical question-answering appliance: the core library.

The two paths of DESIGN.md live here, one folder per stage: ``ingest`` (a document
gets in), ``index`` (the stores), ``retrieve`` (a question gets ranked candidates).
"""

__version__ = "0.1.0"

import os as _os

# Offline only: no model, tokenizer or dataset may ever be fetched from a hub. Set
# before anything imports huggingface_hub or transformers, which read these at import.
_os.environ["HF_HUB_OFFLINE"] = "1"
_os.environ["TRANSFORMERS_OFFLINE"] = "1"
_os.environ["HF_DATASETS_OFFLINE"] = "1"
_os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
