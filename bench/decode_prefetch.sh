#!/usr/bin/env bash
# Whether the AVX-512 one-token kernels should prefetch their weight stream on this machine
# (`--decode-prefetch`, tensor/matmul.h DecodePrefetch): decodes the 0.5B shape in Q8_0 and Q4_0 with the
# prefetch off and on, alternating the two ROUNDS times in the same minutes (off first in odd rounds, on first
# in even ones; the host's bandwidth drifts, so only same-run ratios mean anything), and prints each round and
# the medians, with the probe's GB/s beside.
#   bench/decode_prefetch.sh              (build/flint; FLINT=…, ROUNDS=3, MODELS=/tmp/flint-bench, N=64, REPS=5)
set -euo pipefail
cd "$(dirname "$0")/.."
FLINT=${FLINT:-build/flint}
ROUNDS=${ROUNDS:-3}
MODELS=${MODELS:-/tmp/flint-bench}
N=${N:-64}
REPS=${REPS:-5}
mkdir -p "$MODELS"
"$FLINT" bench --help | grep -q -- --decode-prefetch || { echo "$FLINT has no --decode-prefetch" >&2; exit 1; }
for t in q8_0 q4_0; do
  [ -f "$MODELS/q05-$t.gguf" ] || "$FLINT" mkmodel --shape qwen2.5-coder-0.5b --type $t -o "$MODELS/q05-$t.gguf"
done
grep -m1 'model name' /proc/cpuinfo || true
date -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# One measurement: "tok/s probe_GB/s percent" (decode median, probe median, decode's median share of it).
measure() {  # type, off|on
  "$FLINT" bench -m "$MODELS/q05-$1.gguf" -t 2 -r "$REPS" -p 0 -n "$N" --decode-prefetch "$2" 2>/dev/null | awk -F'|' '
    $6 ~ /tg/ { gsub(/ /, "", $8); tok = $8 }
    /^read bandwidth/ { split($0, x, "): "); split(x[2], y, " "); bw = y[1] }
    /^decode reads/ { split($0, x, "after it: "); split(x[2], y, "%"); pct = y[1] }
    END { if (tok == "" || bw == "" || pct == "") exit 1; print tok, bw, pct }'
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf '| model | round | off: tok/s (probe GB/s, %% of it) | on: tok/s (probe GB/s, %% of it) | on / off |\n|---|---|---|---|---|\n'
for t in q8_0 q4_0; do
  : >"$tmp/$t"
  for r in $(seq "$ROUNDS"); do
    # Every other round measures "on" first, so neither setting always runs in the earlier minute.
    if (( r % 2 )); then
      read -r off_t off_bw off_f <<<"$(measure $t off)"
      read -r on_t on_bw on_f <<<"$(measure $t on)"
    else
      read -r on_t on_bw on_f <<<"$(measure $t on)"
      read -r off_t off_bw off_f <<<"$(measure $t off)"
    fi
    [ -n "$off_t" ] && [ -n "$on_t" ] || { echo "flint bench failed on $t" >&2; exit 1; }
    ratio=$(awk -v a="$off_t" -v b="$on_t" 'BEGIN { printf "%.3f", b / a }')
    echo "$off_t $on_t $ratio" >>"$tmp/$t"
    printf '| %s | %d | %s (%s, %s%%) | %s (%s, %s%%) | %s |\n' "$t" "$r" "$off_t" "$off_bw" "$off_f" "$on_t" "$on_bw" "$on_f" "$ratio"
  done
done
for t in q8_0 q4_0; do
  echo "$t: median off $(cut -d' ' -f1 "$tmp/$t" | median) tok/s, on $(cut -d' ' -f2 "$tmp/$t" | median) tok/s," \
    "median ratio on/off $(cut -d' ' -f3 "$tmp/$t" | median) ($(awk '$3 > 1' "$tmp/$t" | wc -l) of $ROUNDS rounds faster on)"
done
