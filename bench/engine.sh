#!/usr/bin/env bash
# Reproduces the engine figures in BENCHMARKS.md: decode/prefill speed and memory (CPU inference), the
# runtime scenarios, and speculative edits. Writes each command's output under $OUT.
#   bench/engine.sh            (uses build/flint; FLINT=path/to/flint to override)
set -euo pipefail
cd "$(dirname "$0")/.."
FLINT=${FLINT:-build/flint}
OUT=${OUT:-bench/results}
MODELS=${MODELS:-/tmp/flint-bench}
STORIES=../shared/models/stories260K.gguf
mkdir -p "$OUT" "$MODELS"
for t in q8_0 q4_0 q4_k; do  # q4_k on the 0.5B shape is Q5_0 but for the down projections (896-wide rows)
  [ -f "$MODELS/q05-$t.gguf" ] || "$FLINT" mkmodel --shape qwen2.5-coder-0.5b --type $t -o "$MODELS/q05-$t.gguf"
done
for t in q4_k q5_k q6_k; do
  [ -f "$MODELS/q15-$t.gguf" ] || "$FLINT" mkmodel --shape qwen2.5-coder-1.5b --type $t -o "$MODELS/q15-$t.gguf"
done
Q8=$MODELS/q05-q8_0.gguf
Q4=$MODELS/q05-q4_0.gguf
run() {  # name, command...
  local name=$1; shift
  echo "== $name: $*" | tee -a "$OUT/summary.txt"
  { date -u; uptime; "$@"; } > "$OUT/$name.txt" 2>&1
  grep -vE '^flint: (loading|llama|qwen2|[0-9.]+ MiB)' "$OUT/$name.txt" | tail -n 12 | tee -a "$OUT/summary.txt"
}
run stories-speed  "$FLINT" bench -m $STORIES -p 128 -n 256 -r 5 -t 1
run q8-speed       "$FLINT" bench -m $Q8 -p 512 -n 64 -r 3 -t 2 --paired 200  # + decode against a read, token by token
run q4-speed       "$FLINT" bench -m $Q4 -p 512 -n 64 -r 3 -t 2 --paired 200
run q5-speed       "$FLINT" bench -m $MODELS/q05-q4_k.gguf -p 512 -n 64 -r 3 -t 2
run q15-q4k-speed  "$FLINT" bench -m $MODELS/q15-q4_k.gguf -p 128 -n 32 -r 3 -t 2
run q15-q5k-speed  "$FLINT" bench -m $MODELS/q15-q5_k.gguf -p 128 -n 32 -r 3 -t 2
run q15-q6k-speed  "$FLINT" bench -m $MODELS/q15-q6_k.gguf -p 128 -n 32 -r 3 -t 2
run q8-mem-4k      "$FLINT" bench -m $Q8 -c 4096 --kv-type f16 --fill-kv -p 0 -n 8 -r 1 -t 2 --no-bandwidth
run q8-mem-131k    "$FLINT" bench -m $Q8 -c 131072 --kv-type f16 --fill-kv --rope-scaling yarn --rope-scale 4 --yarn-orig-ctx 32768 -p 0 -n 8 -r 1 -t 2 --no-bandwidth
run q8-mem-131k-q8kv "$FLINT" bench -m $Q8 -c 131072 --kv-type q8_0 --fill-kv --rope-scaling yarn --rope-scale 4 --yarn-orig-ctx 32768 -p 0 -n 8 -r 1 -t 2 --no-bandwidth
run q8-runtime     "$FLINT" bench runtime -m $Q8 -t 2 --conv-tokens 8000 --bg-tokens 16000 --window 30 --prefill-chunk 32
run stories-edit   "$FLINT" bench edit -m $STORIES --target-tokens 1000 -t 1 -r 3
run q8-edit        "$FLINT" bench edit -m $Q8 --file src/runtime/runtime.cpp --prompt-tokens 1500 --target-tokens 256 -t 2
