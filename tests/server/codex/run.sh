#!/bin/sh
# CTest entry for the Codex CLI tests: skipped (77) when `npm ci` has not installed Codex here.
cd "$(dirname "$0")" || exit 1
if [ ! -x node_modules/.bin/codex ]; then
  echo "tests/server/codex: node_modules absent; run 'npm ci' here to test with the Codex CLI"
  exit 77
fi
exec node --test
