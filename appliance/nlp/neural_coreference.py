"""Neural coreference for the parse graphs, when a model bundle supplies the weights.

CAGE's paper resolves pronouns with a neural model. F-coref (the ``fastcoref`` package)
is one, but no package here ships its weights and the appliance never downloads from a
hub, so this path runs only where a bundle installs a model in the registry role
``coreference`` (kind ``fastcoref``) and the site installs the ``fastcoref`` package.
Everywhere else ``PronounResolver``, the rule-based default, resolves pronouns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

COREFERENCE_ROLE = "coreference"


def referents_from_clusters(
    doc: Any, clusters: Sequence[Sequence[tuple[int, int]]]
) -> dict[int, Any]:
    """Each pronoun mention's token index -> the head of its cluster's first mention
    that is not a pronoun. ``clusters`` are character spans over ``doc.text``, as
    F-coref's ``get_clusters(as_strings=False)`` gives them; a cluster of pronouns only
    resolves nothing."""
    referents: dict[int, Any] = {}
    for cluster in clusters:
        mentions = [doc.char_span(start, end, alignment_mode="expand") for start, end in cluster]
        mentions = [m for m in mentions if m is not None and len(m)]
        named = next((m for m in mentions if m.root.pos_ != "PRON"), None)
        if named is None:
            continue
        for mention in mentions:
            if mention.root.pos_ == "PRON":
                referents[mention.root.i] = named.root
    return referents


class FastcorefResolver:
    """Pronouns resolved by an F-coref model loaded through the registry."""

    def __init__(self, model: Any, name: str) -> None:
        self._model = model
        self.name = f"fastcoref:{name}"

    def resolve(self, doc: Any) -> dict[int, Any]:
        prediction = self._model.predict(texts=[doc.text])[0]
        return referents_from_clusters(doc, prediction.get_clusters(as_strings=False))
