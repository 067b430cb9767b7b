"""The answer schema as a GBNF grammar, for the llama.cpp server.

llama-cpp-python's server compiles a ``json_object`` schema itself, but its compiler
does not escape a backslash inside a literal: an enum value with a double quote
("marked \"MRSA screen\"") becomes a grammar that does not parse, and the server
dies on it. Verbatim quotes are such values, so the appliance compiles the schema
here, with the same converter and literals escaped whole, and sends the grammar.
Text outside ASCII stays as it is written ("≥ 5 µg"), not as ``\\u`` escapes a
small model would have to spell.
"""

from __future__ import annotations

import json
import re
from typing import Any

_ESCAPED = re.compile(r'[\\\r\n"]')
_ESCAPES = {"\\": "\\\\", "\r": "\\r", "\n": "\\n", '"': '\\"'}


def answer_grammar(schema: dict[str, Any]) -> str:
    """The GBNF grammar that holds generation to ``schema``."""
    from llama_cpp.llama_grammar import SchemaConverter  # the llm extra

    class _Converter(SchemaConverter):
        def _format_literal(self, literal: str) -> str:
            return '"' + _ESCAPED.sub(lambda m: _ESCAPES[m.group(0)], literal) + '"'

        def _generate_constant_rule(self, value: object) -> str:
            return str(self._format_literal(json.dumps(value, ensure_ascii=False)))

    converter = _Converter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
    converter.visit(converter.resolve_refs(schema, "schema"), "")
    return str(converter.format_grammar())
