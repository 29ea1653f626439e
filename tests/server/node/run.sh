#!/bin/sh
# CTest entry for the openai-SDK tests: skipped (77) when `npm ci` has not installed the SDK here.
cd "$(dirname "$0")" || exit 1
if [ ! -d node_modules/openai ] || [ ! -d node_modules/ws ]; then
  echo "tests/server/node: node_modules absent; run 'npm ci' here to test with the openai package"
  exit 77
fi
if [ -n "$FLINT_MODEL" ] && [ ! -f "$FLINT_MODEL" ]; then
  echo "tests/server/node: $FLINT_MODEL absent; skipped"
  exit 77
fi
exec node --test
