"""An LLM generator over the OpenAI-compatible chat-completions API.

The same client talks to vLLM (production: the fine-tuned Llama on a GPU host) and to
the llama.cpp server the appliance starts on a CPU machine. Both constrain decoding to
the answer's JSON schema, so the output always parses; they differ only in how the
request names the schema (``structured_output``). Whatever the model writes is only a
proposal: the answer pipeline verifies every citation before anyone sees it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

import httpx

from appliance.generate.base import (
    SHORT_ANSWERS,
    ContextPassage,
    GeneratedAnswer,
    GeneratorUnavailable,
    ShortAnswer,
)
from appliance.generate.grammar import answer_grammar
from appliance.generate.llama_cpp_server import LlamaCppServer
from appliance.generate.prompt import QuoteRule, answer_schema, build_messages
from appliance.records import AnswerSentence, Citation

StructuredOutput = Literal["json_schema", "json_object", "gbnf"]
"""``json_schema``: OpenAI's form, which vLLM implements. ``json_object``: the
``{"type": "json_object", "schema": ...}`` form of llama-cpp-python's server, which
compiles the schema into a grammar. ``gbnf``: the grammar compiled here
(``generate/grammar.py``) and sent as llama-cpp-python's ``grammar``: what the appliance
uses with the llama.cpp server it starts, whose own compiler breaks on verbatim quotes."""


_SENTENCES_OPEN = re.compile(r'\s*\{\s*"sentences"\s*:\s*\[')
_BETWEEN_ITEMS = re.compile(r"\s*,?\s*")


def complete_sentences(raw: str) -> dict[str, object] | None:
    """The complete sentences of an answer the token limit cut off. The schema puts the
    sentences first, so every sentence object closed before the cut is whole; each is
    verified like any other. ``decision`` and ``not_found`` were never written: they
    count as "none" and true. One pass: each sentence object is decoded where the last
    one ended, until the one the cut left open."""
    opening = _SENTENCES_OPEN.match(raw)
    if opening is None:
        return None
    decoder = json.JSONDecoder()
    sentences: list[object] = []
    at = opening.end()
    while True:
        at = _after_separator(raw, at)
        if raw.startswith("]", at):
            break
        try:
            sentence, at = decoder.raw_decode(raw, at)
        except json.JSONDecodeError:
            break
        sentences.append(sentence)
    return {"sentences": sentences, "decision": "none", "not_found": True}


def _after_separator(raw: str, at: int) -> int:
    """Past the white space and the one comma between two items of a JSON array."""
    separator = _BETWEEN_ITEMS.match(raw, at)
    return at if separator is None else separator.end()


class ParsedAnswer(NamedTuple):
    sentences: tuple[AnswerSentence, ...]
    not_found: bool
    decision: ShortAnswer | None


_UNREADABLE = ParsedAnswer((), True, None)


def parse_answer(raw: str, passages: Sequence[ContextPassage]) -> ParsedAnswer:
    """The sentences of a structured answer, the model's ``not_found`` and its yes/no
    ``decision``. Output that does not follow the schema gives no sentences (the pipeline
    then refuses rather than guess what the model meant); an answer cut off by the token
    limit keeps its complete sentences but no decision; a citation of a chunk outside the
    context is dropped; a sentence repeated is kept once. A claim with one citation and
    no text (the ``quoted`` rule's form) says its quote."""
    try:
        document = json.loads(raw)
    except json.JSONDecodeError:
        salvaged = complete_sentences(raw)
        if salvaged is None:
            return _UNREADABLE
        document = salvaged
    if not isinstance(document, dict) or not isinstance(document.get("not_found"), bool):
        return _UNREADABLE
    in_context = {p.chunk.chunk_id for p in passages}
    sentences: list[AnswerSentence] = []
    for item in document.get("sentences") or []:
        if not isinstance(item, dict):
            continue
        kind = item.get("kind")
        citations = tuple(
            Citation(c["chunk_id"], c["quote"])
            for c in item.get("citations") or []
            if isinstance(c, dict)
            and isinstance(c.get("quote"), str)
            and c.get("chunk_id") in in_context
        )
        text = item.get("text")
        if text is None and kind == "claim" and len(citations) == 1:
            text = citations[0].quote  # a quoted claim: its text is its quote
        if not isinstance(text, str) or not text.strip() or kind not in ("claim", "framing"):
            continue
        sentence = AnswerSentence(text.strip(), kind, citations)
        if sentence not in sentences:
            sentences.append(sentence)
    decision = document.get("decision")
    return ParsedAnswer(
        tuple(sentences), document["not_found"], decision if decision in SHORT_ANSWERS else None
    )


class OpenAICompatibleGenerator:
    """Chat completions with the passages fenced as data and decoding held to the schema."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        structured_output: StructuredOutput = "json_schema",
        quotes: QuoteRule = "quoted",
        framing: bool = False,
        max_tokens: int = 768,
        timeout_s: float = 120.0,
        api_key: str | None = None,
        name: str | None = None,
        server: LlamaCppServer | None = None,
        fence_key: bytes | None = None,
    ) -> None:
        self.name = name or f"openai-compatible:{model}"
        self._server = server  # a server this generator owns, stopped on close
        self._model = model
        self._structured_output = structured_output
        self._quotes = quotes
        self._framing = framing
        self._max_tokens = max_tokens
        self._fence_key = fence_key  # None: a random fence nonce per request
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"), timeout=timeout_s, headers=headers
        )

    def _structure(self, schema: dict[str, object]) -> dict[str, Any]:
        """The request fields that hold decoding to ``schema``."""
        if self._structured_output == "json_schema":
            return {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "cited_answer", "schema": schema, "strict": True},
                }
            }
        if self._structured_output == "gbnf":
            return {"grammar": answer_grammar(schema)}
        return {"response_format": {"type": "json_object", "schema": schema}}

    def request_body(self, question: str, passages: Sequence[ContextPassage]) -> dict[str, Any]:
        """The chat-completions request (deterministic: temperature 0, and with a fence
        key the same prompt for the same question and passages)."""
        schema = answer_schema(passages, self._quotes, self._framing)
        return {
            "model": self._model,
            "messages": build_messages(question, list(passages), self._fence_key),
            "temperature": 0.0,
            "max_tokens": self._max_tokens,
            **self._structure(schema),
        }

    def generate(
        self, question: str, passages: list[ContextPassage], *, search_text: str | None = None
    ) -> GeneratedAnswer:
        """The model reads the question as asked (understood), never the search text: its
        training examples are questions in people's words."""
        body = self.request_body(question, passages)
        try:
            response = self._client.post("/chat/completions", json=body)
        except httpx.HTTPError as error:
            died = self._server.death() if self._server is not None else None
            raise GeneratorUnavailable(
                f"{self.name}: no answer from the server ({died or error})"
            ) from error
        if response.status_code != 200:
            raise GeneratorUnavailable(
                f"{self.name}: the server answered {response.status_code}: {response.text[:300]}"
            )
        try:
            raw = response.json()["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError) as error:
            raise GeneratorUnavailable(
                f"{self.name}: not a chat-completions response ({error})"
            ) from error
        parsed = parse_answer(raw, passages)
        return GeneratedAnswer(parsed.sentences, raw, self.name, parsed.not_found, parsed.decision)

    def close(self) -> None:
        self._client.close()
        if self._server is not None:
            self._server.stop()
