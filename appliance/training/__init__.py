"""Training the site's own models: the cross-encoder reranker and the NLI verifier.

Never imported by the question or the document path (a test checks it): what a model
learned reaches the product only as files in the model registry, with a manifest.

- ``loop``: the one pair-classifier training loop, its report, optimiser and batches.
- ``cross_encoder``: question-passage pairs (multi-hop pools, SciFact, MedQuAD,
  PubMedQA) and the reranker's hooks.
- ``nli_verifier``: NLI pairs, label balance, in-domain repeats and the verifier's hooks.
- ``contrast_pairs``: claims negated with the opposite label, for the verifier.
- ``pools``: the multi-hop candidate pools' file format.
- ``manifest``: the registry manifest written next to a trained model.

The commands that run them are ``appliance models train-reranker`` and ``train-verifier``
(``appliance/cli/training.py``).
"""
