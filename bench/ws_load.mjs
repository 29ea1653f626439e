#!/usr/bin/env node
// Load check: N concurrent WebSocket sessions (default 64) against `flint serve` for a fixed time, each
// sending response.create turns back to back (every turn chains on the previous one with
// previous_response_id, as an agent would, restarting the chain when the context fills).
// Reports requests, errors by kind (only documented 429/503 are acceptable), p50/p99 time to first token
// (client-side: send → first output_text.delta) and generated tokens/s across all sessions.
//
//   node bench/ws_load.mjs --url ws://127.0.0.1:8080/v1/responses --sessions 64 --seconds 30 [--key KEY]
// Needs the `ws` package: run `npm ci` in tests/server/node first (it is resolved from there).
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, '../tests/server/node/package.json'));
const WebSocket = require('ws');

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1] && !all[i + 1].startsWith('--') ? all[i + 1] : 'true']);
  return acc;
}, []));
const url = args.url ?? 'ws://127.0.0.1:8080/v1/responses';
const sessions = Number(args.sessions ?? 64);
const seconds = Number(args.seconds ?? 30);
const maxTokens = Number(args['max-tokens'] ?? 32);
const model = args.model;  // default: the server's only model
const headers = args.key ? { Authorization: `Bearer ${args.key}` } : {};

const ttfts = [];
let tokens = 0, requests = 0;
const errors = {};
const deadline = Date.now() + seconds * 1000;
const prompts = ['Once upon a time', 'The little dog', 'One day, a girl named Lily', 'Tom had a red ball'];

function session(i) {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { headers, perMessageDeflate: false });
    let prev = null, sentAt = 0, first = true, turns = 0;
    const send = () => {
      if (Date.now() >= deadline) { ws.close(); return; }
      const body = { type: 'response.create', input: prompts[(i + turns) % prompts.length], max_output_tokens: maxTokens,
                     temperature: 0.8, store: false };
      if (model) body.model = model;
      if (prev && turns % 8 !== 0) body.previous_response_id = prev;  // chain, restarting every 8 turns
      sentAt = performance.now(); first = true; turns++;
      ws.send(JSON.stringify(body));
    };
    ws.on('open', send);
    ws.on('message', (data) => {
      const ev = JSON.parse(data.toString());
      if (ev.type === 'response.output_text.delta' && first) { ttfts.push(performance.now() - sentAt); first = false; }
      if (ev.type === 'response.completed' || ev.type === 'response.incomplete') {
        requests++;
        tokens += ev.response.usage.output_tokens;
        prev = ev.response.id;
        send();
      } else if (ev.type === 'response.failed' || ev.type === 'error') {
        const k = ev.type === 'error' ? `${ev.status} ${ev.error?.code}` : 'response.failed';
        errors[k] = (errors[k] ?? 0) + 1;
        if (ev.error?.code === 'context_length_exceeded') prev = null;
        if (ev.error?.code === 'websocket_connection_limit_reached') { ws.close(); return; }
        setTimeout(send, ev.status === 429 || ev.status === 503 ? 100 : 0);
      }
    });
    ws.on('error', (e) => { errors[`socket: ${e.message}`] = (errors[`socket: ${e.message}`] ?? 0) + 1; });
    ws.on('close', resolve);
  });
}

const t0 = performance.now();
await Promise.all(Array.from({ length: sessions }, (_, i) => session(i)));
const elapsed = (performance.now() - t0) / 1000;
ttfts.sort((a, b) => a - b);
const pct = (p) => (ttfts.length ? ttfts[Math.min(ttfts.length - 1, Math.floor(p * ttfts.length))].toFixed(1) : 'n/a');
const report = {
  url, sessions, seconds: Number(elapsed.toFixed(1)), requests, output_tokens: tokens,
  tokens_per_s: Number((tokens / elapsed).toFixed(1)), ttft_ms_p50: pct(0.5), ttft_ms_p99: pct(0.99), errors,
};
console.log(JSON.stringify(report, null, 1));
const bad = Object.keys(errors).filter((k) => !k.startsWith('429') && !k.startsWith('503'));
process.exit(bad.length ? 1 : 0);
