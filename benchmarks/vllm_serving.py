"""An OpenAI-compatible answer server under load, as the appliance's ``openai`` generator
uses it: vLLM on a GPU host (``scripts/gpu_check.sh``), or, to rehearse on a CPU machine,
the llama.cpp server the appliance manages (``--llama-cpp-role``).

The requests are the golden questions' answer requests: the sample corpus ingested into
a scratch data directory, each question's context passages as the query path ranks them
for a reader of everything, and the request body ``OpenAICompatibleGenerator`` sends
(schema-constrained decoding, temperature 0). Each is sent once at every concurrency
asked for. Reported per concurrency: generated tokens per second over the run (from the
server's ``usage``), request p50/p95, and the share of responses that parse and follow
the answer schema with the request's own chunk ids.

    .venv/bin/python benchmarks/vllm_serving.py --base-url http://127.0.0.1:8000/v1 \\
        --model appliance-tuned [--concurrency 1 16] [--golden FILE ...] [--out DIR]
    .venv/bin/python benchmarks/vllm_serving.py --llama-cpp-role llm-small --concurrency 1 2
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, get_args

import httpx
import jsonschema
from rich.console import Console
from rich.table import Table

from appliance.engines import Appliance
from appliance.eval.golden import reader_of_everything
from appliance.generate.base import ContextPassage
from appliance.generate.llama_cpp_server import LlamaCppServer
from appliance.generate.openai_compatible import OpenAICompatibleGenerator, StructuredOutput
from appliance.generate.prompt import answer_schema
from appliance.index.filters import ActiveOn
from appliance.model_registry import ModelRegistry
from appliance.settings import PROJECT_ROOT, Settings

SAMPLE = PROJECT_ROOT / "appliance" / "sample_corpus"
console = Console(stderr=True)


Request = tuple[dict[str, Any], dict[str, object]]
"""A request body and the answer schema it holds decoding to."""


def answer_requests(
    goldens: list[Path], model: str, structured_output: StructuredOutput, max_tokens: int
) -> list[Request]:
    """The request body of each golden question, with the context the query path gives,
    and the schema its answer must follow."""
    client = OpenAICompatibleGenerator(
        "http://unused", model, structured_output=structured_output, max_tokens=max_tokens
    )
    bodies: list[Request] = []
    with (
        tempfile.TemporaryDirectory(prefix="serving-") as work,
        Appliance(Settings(data_dir=Path(work))) as appliance,
    ):
        report = appliance.ingestor.ingest([SAMPLE / "documents"])
        assert not report.failed, report.failed
        reader = reader_of_everything(appliance)
        context_size = appliance.answer_gates.context_passages
        rows = [json.loads(line) for g in goldens for line in g.open() if line.strip()]
        for row in rows:
            day = dt.date.fromisoformat(row["as_of"]) if row.get("as_of") else dt.date.today()
            found = appliance.query.run(row["question"], reader, context_size, ActiveOn(day))
            passages = [ContextPassage(n, c.chunk) for n, c in enumerate(found.candidates, 1)]
            if passages:
                bodies.append(
                    (client.request_body(row["question"], passages), answer_schema(passages))
                )
    client.close()
    return bodies


def follows_schema(schema: dict[str, object], content: str) -> bool:
    """The response parses and follows the schema the request held decoding to."""
    try:
        jsonschema.validate(json.loads(content), schema)
    except (json.JSONDecodeError, jsonschema.ValidationError):
        return False
    return True


def send(client: httpx.Client, request: Request) -> dict[str, Any]:
    body, schema = request
    started = time.perf_counter()
    response = client.post("/chat/completions", json=body)
    seconds = time.perf_counter() - started
    if response.status_code != 200:
        return {"seconds": seconds, "error": f"{response.status_code} {response.text[:200]}"}
    reply = response.json()
    content = reply["choices"][0]["message"]["content"] or ""
    return {
        "seconds": seconds,
        "tokens": int(reply.get("usage", {}).get("completion_tokens", 0)),
        "valid": follows_schema(schema, content),
    }


def at_concurrency(base_url: str, bodies: list[Request], concurrency: int) -> dict[str, Any]:
    with httpx.Client(base_url=base_url.rstrip("/"), timeout=600) as client:
        send(client, bodies[0])  # warm: the first request also fills the server's caches
        started = time.perf_counter()
        with ThreadPoolExecutor(concurrency) as pool:
            results = list(pool.map(lambda body: send(client, body), bodies))
        wall = time.perf_counter() - started
    answered = [r for r in results if "error" not in r]
    seconds = sorted(r["seconds"] for r in answered)
    tokens = sum(r["tokens"] for r in answered)
    return {
        "concurrency": concurrency,
        "requests": len(results),
        "errors": [r["error"] for r in results if "error" in r][:5],
        "wall_s": round(wall, 1),
        "tokens_per_s": round(tokens / wall, 1),
        "p50_s": round(statistics.median(seconds), 2) if seconds else None,
        "p95_s": round(seconds[int(0.95 * (len(seconds) - 1))], 2) if seconds else None,
        "schema_valid": round(sum(r["valid"] for r in answered) / len(results), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000/v1")
    parser.add_argument("--model", default="appliance-tuned", help="the served model's name")
    parser.add_argument("--structured-output", choices=get_args(StructuredOutput))
    parser.add_argument("--llama-cpp-role", help="rehearse on the CPU: serve this GGUF role")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--max-tokens", type=int, default=768)
    parser.add_argument("--golden", type=Path, nargs="*")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "benchmarks/results/gpu")
    args = parser.parse_args()
    goldens = args.golden or [SAMPLE / "golden.jsonl"]
    server: LlamaCppServer | None = None
    base_url, model = args.base_url, args.model
    structured: StructuredOutput = args.structured_output or "json_schema"
    if args.llama_cpp_role:  # the site's models: APPLIANCE_DATA_DIR's, as for the product
        model_path = ModelRegistry(Settings()).load(args.llama_cpp_role)
        server = LlamaCppServer(model_path, alias=args.llama_cpp_role)
        server.start()
        base_url, model = server.base_url, args.llama_cpp_role
        structured = args.structured_output or "gbnf"
    try:
        console.log(f"building the answer requests of {', '.join(g.name for g in goldens)}")
        bodies = answer_requests(goldens, model, structured, args.max_tokens)
        rows = []
        for concurrency in args.concurrency:
            console.log(f"{len(bodies)} requests at concurrency {concurrency} to {base_url}")
            rows.append(at_concurrency(base_url, bodies, concurrency))
    finally:
        if server is not None:
            server.stop()
    table = Table(title=f"{model} at {base_url}")
    for column in (
        "concurrency",
        "requests",
        "tokens/s",
        "p50 s",
        "p95 s",
        "schema valid",
        "errors",
    ):
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(
            str(row["concurrency"]), str(row["requests"]), str(row["tokens_per_s"]),
            str(row["p50_s"]), str(row["p95_s"]), str(row["schema_valid"]), str(len(row["errors"])),
        )  # fmt: skip
    Console().print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    written = args.out / "serving.json"
    report = {"model": model, "server": "llama.cpp" if server else base_url, "rows": rows,
              "questions": [str(g.relative_to(PROJECT_ROOT)) if g.is_relative_to(PROJECT_ROOT) else g.name for g in goldens]}  # fmt: skip
    written.write_text(json.dumps(report, indent=2) + "\n")
    console.log(f"written: {written}")


if __name__ == "__main__":
    main()
