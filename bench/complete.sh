#!/usr/bin/env bash
# What a keystroke costs `flint complete`: types a line into the middle of a ~600-line C++ file one character
# at a time and completes after each, alternating the modes in MODES (default "psm line"):
#   whole  the whole file, plain PSM (--prefix-lines 0 --suffix-lines 0 --psm)
#   psm    the default window (256 lines above, 16 below, its start on a multiple of 32 lines), plain PSM
#   line   the default window, the cursor's line after <fim_middle> (the default: the suffix stays cached)
# Prints per keystroke the round trip, prompt tokens and cached tokens (from -v), then the medians of each mode.
#   bench/complete.sh [MODEL.gguf]   (default: a Qwen2.5-Coder-0.5B-shaped Q8_0 from `flint mkmodel`;
#                                     FLINT=path/to/flint, THREADS=2; WINDOW_ARGS="--suffix-lines 64" to
#                                     change the window of psm and line)
set -euo pipefail
cd "$(dirname "$0")/.."
FLINT=${FLINT:-build/flint}
MODEL=${1:-/tmp/models/q05-q8_0.gguf}
[ -f "$MODEL" ] || { echo "no model $MODEL (flint mkmodel --shape qwen2.5-coder-0.5b --type q8_0 -o $MODEL)"; exit 1; }
work=$(mktemp -d)
log=$work/serve.log
"$FLINT" serve -m "$MODEL" --port 0 --no-store --ctx 16384 -t "${THREADS:-2}" >"$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 600); do grep -q "listening on" "$log" && break; sleep 0.1; done
url=$(grep -o "http://[0-9.]*:[0-9]*" "$log" | head -1)
[ -n "$url" ] || { echo "flint serve did not start:"; cat "$log"; exit 1; }
# ~600 lines of this repository's C++, the cursor on line 300.
cat src/server/generation.cpp src/server/chat_completions_api.cpp src/server/responses_api.cpp | head -n 600 > "$work/base.cpp"
typed="    int n = 0;"
echo "mode,keystroke,round_trip_ms,prompt_tokens,cached_tokens"
for ((k = 1; k <= ${#typed}; k++)); do
  { head -n 299 "$work/base.cpp"; printf '%s\n' "${typed:0:k}"; tail -n +300 "$work/base.cpp"; } > "$work/edit.cpp"
  for mode in ${MODES:-psm line}; do
    case $mode in
      whole) args="--prefix-lines 0 --suffix-lines 0 --psm" ;;
      psm) args="${WINDOW_ARGS:-} --psm" ;;
      line) args="${WINDOW_ARGS:-}" ;;
      *) echo "unknown mode $mode (whole, psm, line)" >&2; exit 1 ;;
    esac
    "$FLINT" complete "$work/edit.cpp:300:$((k + 1))" -n 4 -v $args --url "$url" >/dev/null 2>"$work/err"
    line=$(grep -o 'sent; [0-9]* prompt tokens ([0-9]* cached), [0-9]* completion tokens, [0-9.]* ms' "$work/err")
    read -r prompt cached ms < <(echo "$line" | sed -E 's/sent; ([0-9]+) prompt tokens \(([0-9]+) cached\), [0-9]+ completion tokens, ([0-9.]+) ms/\1 \2 \3/')
    echo "$mode,$k,$ms,$prompt,$cached"
  done
done | tee "$work/rows.csv"
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
for mode in ${MODES:-psm line}; do  # the first keystroke of each mode is its cold start: left out
  rows=$(grep "^$mode," "$work/rows.csv" | tail -n +2)
  echo "$mode: median round trip $(echo "$rows" | cut -d, -f3 | median) ms over $(echo "$rows" | wc -l) keystrokes," \
       "prompt $(echo "$rows" | cut -d, -f4 | median) tokens, cached $(echo "$rows" | cut -d, -f5 | median)"
done
