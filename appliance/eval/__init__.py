"""The release gate: every golden question through the whole answer path, its figures
(gold quotes, refusals, exact spans, unsafe answers, latency) against ``gates.toml``, and
the report. Research benchmarks live in ``benchmarks/``."""
