"""The rerank benchmark's research code: the harness over multi-hop candidate pools, the
bridge-aware methods it compares, and its report. Run it with ``benchmarks/rerank.py``;
nothing in ``appliance`` imports it."""
