#!/usr/bin/env bash
# What a keystroke costs `flint complete`: types three lines (Enter included) into the middle of a ~600-line
# C++ file one character at a time and completes after each, alternating the modes in MODES (default
# "psm line band"):
#   whole  the whole file, plain PSM (--prefix-lines 0 --suffix-lines 0 --band-lines 0)
#   psm    the default window (256 lines above, 16 below, its start on a multiple of 32 lines), plain PSM
#   line   the default window, the cursor's line after <fim_middle> (--band-lines 1, as llama.vim sends it)
#   band   the default window, the server's default band of 8 lines after <fim_middle>
# Prints per keystroke the round trip, prompt tokens and cached tokens (from -v) and, with --stream, when the
# first text came; then per mode the median, mean and largest round trip (Enter is where line and band
# differ: the mean shows it) and the median first text.
#   bench/complete.sh [MODEL.gguf]   (default: a Qwen2.5-Coder-0.5B-shaped Q8_0 from `flint mkmodel`;
#                                     FLINT=path/to/flint, THREADS=2; WINDOW_ARGS="--suffix-lines 64" to
#                                     change the window of psm, line and band; TOKENS=4 tokens a completion;
#                                     EXTRA_ARGS="--stream" added to every call)
set -euo pipefail
cd "$(dirname "$0")/.."
FLINT=${FLINT:-build/flint}
MODEL=${1:-/tmp/models/q05-q8_0.gguf}
[ -f "$MODEL" ] || { echo "no model $MODEL (flint mkmodel --shape qwen2.5-coder-0.5b --type q8_0 -o $MODEL)"; exit 1; }
work=$(mktemp -d)
modes=${MODES:-psm line band}
# One server per mode, so no mode finds another's prompts in its prefix cache (plain PSM's prompt after
# Enter is the one-line band's); they run one request at a time, alternating.
servers=()
trap 'kill "${servers[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
declare -A url
for mode in $modes; do
  "$FLINT" serve -m "$MODEL" --port 0 --no-store --ctx 16384 -t "${THREADS:-2}" >"$work/serve-$mode.log" 2>&1 &
  servers+=($!)
  for _ in $(seq 600); do grep -q "listening on" "$work/serve-$mode.log" && break; sleep 0.1; done
  url[$mode]=$(grep -o "http://[0-9.]*:[0-9]*" "$work/serve-$mode.log" | head -1)
  [ -n "${url[$mode]}" ] || { echo "flint serve did not start:"; cat "$work/serve-$mode.log"; exit 1; }
done
# ~600 lines of this repository's C++, the cursor on line 300.
cat src/server/generation.cpp src/server/chat_completions_api.cpp src/server/responses_api.cpp | head -n 600 > "$work/base.cpp"
typed=$'    int n = 0;\n    n += 1;\n    return n;'
echo "mode,keystroke,round_trip_ms,prompt_tokens,cached_tokens,first_text_ms"
for ((k = 1; k <= ${#typed}; k++)); do
  part=${typed:0:k}
  { head -n 299 "$work/base.cpp"; printf '%s\n' "$part"; tail -n +300 "$work/base.cpp"; } > "$work/edit.cpp"
  newlines=${part//[!$'\n']/}
  last=${part##*$'\n'}
  where="$work/edit.cpp:$((300 + ${#newlines})):$((${#last} + 1))"
  for mode in $modes; do
    case $mode in
      whole) args="--prefix-lines 0 --suffix-lines 0 --band-lines 0" ;;
      psm) args="${WINDOW_ARGS:-} --band-lines 0" ;;
      line) args="${WINDOW_ARGS:-} --band-lines 1" ;;
      band) args="${WINDOW_ARGS:-}" ;;
      *) echo "unknown mode $mode (whole, psm, line, band)" >&2; exit 1 ;;
    esac
    "$FLINT" complete "$where" -n "${TOKENS:-4}" -v $args ${EXTRA_ARGS:-} --url "${url[$mode]}" >/dev/null 2>"$work/err"
    line=$(grep -o 'sent; [0-9]* prompt tokens ([0-9]* cached), [0-9]* completion tokens, [0-9.]* ms' "$work/err")
    read -r prompt cached ms < <(echo "$line" | sed -E 's/sent; ([0-9]+) prompt tokens \(([0-9]+) cached\), [0-9]+ completion tokens, ([0-9.]+) ms/\1 \2 \3/')
    first=$(grep -o 'first text at [0-9]* ms' "$work/err" | grep -o '[0-9]*' || true)
    echo "$mode,$k,$ms,$prompt,$cached,$first"
  done
done | tee "$work/rows.csv"
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
for mode in $modes; do  # the first keystroke of each mode is its cold start: left out
  rows=$(grep "^$mode," "$work/rows.csv" | tail -n +2)
  echo "$mode: round trip median $(echo "$rows" | cut -d, -f3 | median) ms," \
       "$(echo "$rows" | cut -d, -f3 | awk '{s += $1; if ($1 > m) m = $1} END {printf "mean %.1f ms, largest %.1f ms", s / NR, m}')" \
       "over $(echo "$rows" | wc -l) keystrokes; prompt $(echo "$rows" | cut -d, -f4 | median) tokens, cached $(echo "$rows" | cut -d, -f5 | median) (medians)$(echo "$rows" | cut -d, -f6 | { grep . || true; } | median | sed -E 's/^(.+)$/; first text median \1 ms/')"
done
