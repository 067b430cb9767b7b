"""Turning ranked chunks into an answer whose every claim cites a chunk.

``base`` holds the interface (one ``Generator`` protocol, the passages it is given, what
it returns, ``GeneratorUnavailable``); ``prompt`` builds the rules and the fenced
passages an LLM sees; ``extractive`` is the default on a CPU-only machine (no LLM: the
best sentences of the top chunks, verbatim, each cited); ``openai_compatible`` asks an
OpenAI-compatible server (vLLM, llama.cpp) for structured output; ``llama_cpp_server``
starts and stops the local llama.cpp server.
"""
