"""Checking every citation before an answer is shown.

``spans``: the quote exists character for character (after whitespace normalisation)
in the cited chunk, which was in the generator's context; ``base``: the entailment
verifier interface; ``lexical``: the fallback verifier used only when no NLI model is
installed, and labelled as such in the answer.
"""
