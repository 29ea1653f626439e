#!/bin/sh
# CTest entry for the OpenAI Agents SDK tests: skipped (77) when `npm ci` has not installed the SDK here.
cd "$(dirname "$0")" || exit 1
if [ ! -d node_modules/@openai/agents ] || [ ! -d node_modules/zod ]; then
  echo "tests/server/agents: node_modules absent; run 'npm ci' here to test with the OpenAI Agents SDK"
  exit 77
fi
# The SDK's WebSocket transport uses the global WebSocket, built into Node from 22 and behind a flag in 20.
if ! node -e 'process.exit(typeof WebSocket === "function" ? 0 : 1)'; then
  NODE_OPTIONS="${NODE_OPTIONS:+$NODE_OPTIONS }--experimental-websocket"
  export NODE_OPTIONS
fi
exec node --test
