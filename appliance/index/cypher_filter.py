"""The filter language compiled into a Cypher boolean expression over a chunk node.

Only our own grammar reaches the query text (field names from the closed
``FILTER_FIELDS``, operators we write); every value is a query parameter.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from appliance.index.filters import (
    ActiveOn,
    AllOf,
    AnyOf,
    NoneOf,
    OneOf,
    SearchFilter,
    day_number,
)

LIST_FIELDS = frozenset({"departments"})


@dataclass(slots=True)
class CompiledFilter:
    """``expression`` for a WHERE clause and the ``parameters`` it names."""

    expression: str
    parameters: dict[str, object] = field(default_factory=dict)


def compile_filter(
    search_filter: SearchFilter | None, node: str = "c", prefix: str = "access"
) -> CompiledFilter:
    """``search_filter`` over the chunk node ``node``; parameters are named
    ``<prefix>_<n>`` so that they cannot clash with a template's own."""
    compiled = CompiledFilter("true")
    if search_filter is not None:
        compiled.expression = _compile(search_filter, node, prefix, compiled.parameters)
    return compiled


def _compile(f: SearchFilter, node: str, prefix: str, parameters: dict[str, object]) -> str:
    def parameter(value: object) -> str:
        name = f"{prefix}_{len(parameters)}"
        parameters[name] = value
        return f"${name}"

    match f:
        case AnyOf(field=name, values=values):
            values_param = parameter(list(values))
            if name in LIST_FIELDS:
                return f"any(value IN {node}.{name} WHERE value IN {values_param})"
            return f"{node}.{name} IN {values_param}"
        case ActiveOn(day=day):
            day_param = parameter(day_number(day))
            return f"({node}.effective_from <= {day_param} AND {node}.effective_to > {day_param})"
        case AllOf(clauses=clauses):
            parts = [_compile(c, node, prefix, parameters) for c in clauses]
            return "(" + " AND ".join(parts) + ")" if parts else "true"
        case OneOf(clauses=clauses):
            parts = [_compile(c, node, prefix, parameters) for c in clauses]
            return "(" + " OR ".join(parts) + ")" if parts else "false"
        case NoneOf(clauses=clauses):
            parts = [_compile(c, node, prefix, parameters) for c in clauses]
            return "NOT (" + " OR ".join(parts) + ")" if parts else "true"
    raise TypeError(f"not a search filter: {f!r}")
