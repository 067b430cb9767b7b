"""The answer schema as a GBNF grammar, for the llama.cpp server.

llama-cpp-python's server compiles a ``json_object`` schema itself, but its compiler
does not escape a backslash inside a literal: an enum value with a double quote
("marked \"MRSA screen\"") becomes a grammar that does not parse, and the server
dies on it. Its string rule also admits raw control characters, so a model may end
a line inside a string and write something that is not JSON. Verbatim quotes are
such values, so the appliance compiles the schema here, with the same converter,
literals escaped whole and strings held to JSON's characters, and sends the grammar.
Text outside ASCII stays as it is written ("≥ 5 µg"), not as ``\\u`` escapes a
small model would have to spell.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

_ESCAPED = re.compile(r'[\\\r\n"]')
_ESCAPES = {"\\": "\\\\", "\r": "\\r", "\n": "\\n", '"': '\\"'}

_HEX = "[0-9a-fA-F]"
JSON_STRING_CHAR = r'[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" ' + " ".join([_HEX] * 4) + ")"
"""One character of a JSON string: no raw control character, escapes spelled whole."""


def answer_grammar(schema: dict[str, Any]) -> str:
    """The GBNF grammar that holds generation to ``schema``."""
    converter = _converter_class()(
        prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False
    )
    converter.visit(converter.resolve_refs(schema, "schema"), "")
    return str(converter.format_grammar())


@functools.cache
def _converter_class() -> type[Any]:
    """llama-cpp-python's converter with literals and string characters made JSON's.

    Built once, on first use: llama_cpp belongs to the llm extra."""
    from llama_cpp.llama_grammar import SchemaConverter

    class Converter(SchemaConverter):
        def _format_literal(self, literal: str) -> str:
            return '"' + _ESCAPED.sub(lambda m: _ESCAPES[m.group(0)], literal) + '"'

        def _generate_constant_rule(self, value: object) -> str:
            return str(self._format_literal(json.dumps(value, ensure_ascii=False)))

        def _add_rule(self, name: str, rule: str) -> str:
            return str(super()._add_rule(name, JSON_STRING_CHAR if name == "char" else rule))

    return Converter
