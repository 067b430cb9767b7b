"""Turning ranked chunks into an answer whose every claim cites a chunk.

``base`` holds the interface (one ``Generator`` protocol, the passages it is given and
what it returns); ``prompt`` builds the rules and the fenced passages an LLM sees;
``extractive`` is the default on a CPU-only machine (no LLM: the best sentences of the
top chunks, verbatim, each cited).
"""
