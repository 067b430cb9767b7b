"""Checking an answer before it is shown.

``citations``: every citation's quote stands in a chunk the generator was given, entails
its sentence and applies to the patient (``CitationChecker``); ``spans``: finding a quote
character for character (after whitespace normalisation); ``base``: the entailment
verifier interface, with ``nli`` (the registry's NLI model) and ``lexical`` (the
fallback, labelled as such in the answer); ``scope``: whom a passage or a claim applies
to; ``coverage``: whether the passages name what the question names;
``answerability``: the later checks (not in force, lost to scope, doses, unanswered
parts).
"""
