#!/usr/bin/env bash
# The GPU check of the fine-tuned generator, in one go on a GPU host (kept under 8
# minutes, the install included): vLLM serves the tuned model (the base that
# `appliance models train-generator` saved, with its LoRA adapter, --enable-lora), the
# sample corpus is ingested into a scratch data directory, `appliance eval --golden`
# answers every set through the `openai` generator with decoding held to the answer
# schema, and benchmarks/vllm_serving.py measures tokens/s, p50/p95 and schema validity
# at 1 and 16 concurrent requests. Everything lands in benchmarks/results/gpu/.
#
#   TUNED=$APPLIANCE_DATA_DIR/models/generator-lora VLLM_WHEELS=/media/bundle/wheels \
#       scripts/gpu_check.sh
#
# TUNED: the folder train-generator wrote (base/ and adapter/), or merge-generator --vllm
# from the shipped adapter; VLLM_WHEELS: vLLM and its dependencies as wheels (the offline
# bundle's), installed with --no-index when vllm is not importable. REHEARSE_ON_CPU=1 runs
# the same steps on a CPU machine with the llama.cpp server and the merged GGUF of
# TUNED_ROLE (default llm-tuned) instead of vLLM.
# EVAL_SETS, CONCURRENCY and MAX_TOKENS override the golden sets, the concurrencies and
# the longest answer of the serving benchmark.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
APPLIANCE=${APPLIANCE:-.venv/bin/appliance}
DATA=${APPLIANCE_DATA_DIR:-$PWD/.appliance-data}
TUNED=${TUNED:-$DATA/models/generator-lora}
OUT=${GPU_RESULTS:-benchmarks/results/gpu}
EVAL_SETS=${EVAL_SETS:-appliance/sample_corpus/golden.jsonl appliance/sample_corpus/golden-graph.jsonl}
CONCURRENCY=${CONCURRENCY:-1 16}
PORT=${PORT:-8000}
SERVED=appliance-tuned
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
scratch=$(mktemp -d)
server=""
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
    rm -rf "$scratch"
}
trap cleanup EXIT
started=$(date +%s)
step() { echo "[$(($(date +%s) - started)) s] $*"; }

if [ "${REHEARSE_ON_CPU:-0}" = 1 ]; then
    role=${TUNED_ROLE:-llm-tuned}
    APPLIANCE_DATA_DIR="$DATA" "$PY" -c 'import sys
from appliance.model_registry import ModelRegistry
from appliance.settings import Settings
ModelRegistry(Settings()).resolve(sys.argv[1])' "$role"
    generator=(APPLIANCE_GENERATOR__KIND=llama-cpp "APPLIANCE_GENERATOR__MODEL_ROLE=$role")
    serving=(--llama-cpp-role "$role")
    step "rehearsal on the CPU: llama.cpp serves $role"
else
    for part in base adapter; do
        if [ ! -d "$TUNED/$part" ]; then
            echo "no $TUNED/$part: run 'appliance models merge-generator --vllm' (the shipped" \
                "adapter) or 'train-generator' first, or set TUNED" >&2
            exit 2
        fi
    done
    if ! "$PY" -c "import vllm" 2>/dev/null; then
        if [ -z "${VLLM_WHEELS:-}" ]; then
            echo "vllm is not installed and VLLM_WHEELS names no folder of wheels" >&2
            exit 2
        fi
        step "installing vLLM from $VLLM_WHEELS"
        "$PY" -m pip install --quiet --no-index --find-links "$VLLM_WHEELS" vllm
    fi
    step "vLLM serves $TUNED/base with the adapter as $SERVED"
    "$PY" -m vllm.entrypoints.openai.api_server --model "$TUNED/base" --served-model-name base \
        --enable-lora --lora-modules "$SERVED=$TUNED/adapter" --max-lora-rank 64 \
        --dtype bfloat16 --host 127.0.0.1 --port "$PORT" >"$OUT/vllm.log" 2>&1 &
    server=$!
    until curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null; do
        if ! kill -0 "$server" 2>/dev/null || [ $(($(date +%s) - started)) -gt 300 ]; then
            echo "vLLM did not start; its log:" >&2
            tail -n 40 "$OUT/vllm.log" >&2
            exit 1
        fi
        sleep 1
    done
    generator=(APPLIANCE_GENERATOR__KIND=openai "APPLIANCE_GENERATOR__SERVER_URL=http://127.0.0.1:$PORT/v1"
               "APPLIANCE_GENERATOR__SERVED_MODEL=$SERVED" APPLIANCE_GENERATOR__STRUCTURED_OUTPUT=json_schema)
    serving=(--base-url "http://127.0.0.1:$PORT/v1" --model "$SERVED")
fi

# A scratch data directory with the site's models: the sample corpus, then every set.
scratch_env=(APPLIANCE_DATA_DIR="$scratch/data" APPLIANCE_LOCAL_MODEL_DIR="$DATA/models" "${generator[@]}")
step "ingesting the sample corpus"
env "${scratch_env[@]}" "$APPLIANCE" ingest appliance/sample_corpus/documents >"$OUT/ingest.log" 2>&1
status=0
for golden in $EVAL_SETS; do
    name=$(basename "$golden" .jsonl)
    step "appliance eval --golden $golden"
    env "${scratch_env[@]}" "$APPLIANCE" eval --golden "$golden" --report "$OUT/eval-$name" \
        >"$OUT/eval-$name.log" 2>&1 || status=$?
    tail -n 3 "$OUT/eval-$name.log"
done
step "serving benchmark at concurrency $CONCURRENCY"
# shellcheck disable=SC2086
env APPLIANCE_DATA_DIR="$DATA" "$PY" benchmarks/vllm_serving.py "${serving[@]}" \
    --golden $EVAL_SETS --concurrency $CONCURRENCY --max-tokens "${MAX_TOKENS:-768}" --out "$OUT"
step "done (eval exit status $status: 1 means a release gate failed, the figures are in $OUT)"
