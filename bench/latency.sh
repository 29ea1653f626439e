#!/bin/bash
# The latency benchmark behind the README's transport figures: starts `flint serve` (stories260K with a
# 20k-token context, so the conversation can grow to ~16k tokens), runs `flint bench latency` against it,
# and writes bench/latency.csv, bench/latency.md (the table) and bench/latency.png (TTFT per turn, gnuplot).
#   bench/latency.sh [path/to/flint]      (default build/flint; takes ~1-3 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
FLINT=${1:-build/flint}
TURNS=${TURNS:-16}
log=$(mktemp)
# -t 1: the engine's kernels on one core, the other left to the I/O threads and this client — with both
# cores in the engine (its workers spin between matmuls) every token waits for a core, not for the wire.
"$FLINT" serve --port 0 --no-store --ctx 20480 -t 1 >"$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 100); do grep -q "listening on" "$log" && break; sleep 0.1; done
url=$(grep -o "http://[0-9.]*:[0-9]*" "$log" | head -1)
[ -n "$url" ] || { echo "flint serve did not start:"; cat "$log"; exit 1; }
"$FLINT" bench latency --url "$url" --turns "$TURNS" --no-reuse-turns "${NO_REUSE_TURNS:-8}" --csv bench/latency.csv | tee bench/latency.md
if command -v gnuplot >/dev/null; then
  gnuplot <<'GP'
set terminal pngcairo size 900,520 noenhanced font ",11"
set output "bench/latency.png"
set datafile separator ","
set title "flint bench latency: time to first token per turn (stories260K, CPU)"
set xlabel "conversation size (prompt tokens)"
set ylabel "TTFT (ms, client-observed)"
set key top left
set grid
plot "< grep '^a,' bench/latency.csv" using 3:5 with linespoints title "(a) new connection + SSE, full resend", \
     "< grep '^b,' bench/latency.csv" using 3:5 with linespoints title "(b) keep-alive + SSE, previous_response_id", \
     "< grep '^c,' bench/latency.csv" using 3:5 with linespoints title "(c) persistent WebSocket, previous_response_id", \
     "< grep '^w,' bench/latency.csv" using 3:5 with linespoints title "(c) + the turn's file sent ahead as a generate:false warm-up", \
     "< grep '^n,' bench/latency.csv" using 3:5 with linespoints dashtype 2 title "(a) with no prefix-cache hit (a server without cross-request KV reuse)"
GP
  echo "wrote bench/latency.png"
fi
