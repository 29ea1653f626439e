// The official Codex CLI (npm @openai/codex), unmodified, against a real `flint serve`: `codex exec` over
// HTTP/SSE and over the Responses WebSocket, a resumed thread, and a refused key. The model is a scripted
// one (`flint mkmodel --script`): the real engine runs Codex's whole prompt (~6k tokens of instructions
// and tools) and writes a known answer, so the test can check what Codex shows.
// Run: FLINT_BINARY=build/flint node --test   (CTest does this; `npm ci` here first installs Codex).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BINARY = process.env.FLINT_BINARY;
const CODEX = join(dirname(fileURLToPath(import.meta.url)), 'node_modules', '.bin', 'codex');
const SCRIPT = 'Hello from flint.';
const KEY = 'sk-flint-codex-test';
let server;
let port;
let dir;

before(async () => {
  assert.ok(BINARY, 'set FLINT_BINARY to the flint executable');
  dir = mkdtempSync(join(tmpdir(), 'flint-codex-'));
  const model = join(dir, 'scripted.gguf');
  execFileSync(BINARY, ['mkmodel', '--script', SCRIPT, '-o', model], { stdio: ['ignore', 'ignore', 'inherit'] });
  const args = ['serve', '--port', '0', '--ctx', '32768', '-t', '1', '--store', join(dir, 'responses.db'),
    '--api-key', KEY, '-m', `scripted=${model}`];
  server = spawn(BINARY, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  port = await new Promise((resolve, reject) => {
    server.on('exit', (code) => reject(new Error(`flint serve exited with ${code}`)));
    server.stdout.on('data', (chunk) => {
      out += chunk;
      const m = out.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) resolve(Number(m[1]));
    });
  });
  mkdirSync(join(dir, 'work'));
});

after(async () => {
  if (server && server.exitCode === null) {
    server.kill('SIGTERM');
    await once(server, 'exit');
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// `codex exec --json …` against the server: its exit code and its JSONL events.
async function codex(rest, { websocket, key = KEY }) {
  const provider = `model_providers.flint={name="flint", base_url="http://127.0.0.1:${port}/v1", ` +
    `wire_api="responses", env_key="FLINT_TEST_KEY", supports_websockets=${websocket}, ` +
    'request_max_retries=0, stream_max_retries=0}';
  const args = ['exec', '--json', '--skip-git-repo-check', '-C', join(dir, 'work'), '-c', 'model_provider=flint',
    '-c', provider, '-m', 'scripted', ...rest];
  const env = { PATH: process.env.PATH, HOME: dir, CODEX_HOME: join(dir, 'codex-home'), FLINT_TEST_KEY: key };
  mkdirSync(env.CODEX_HOME, { recursive: true });
  const child = spawn(CODEX, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => { stdout += c; });
  child.stderr.on('data', (c) => { stderr += c; });
  const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
  const [code] = await once(child, 'exit');
  clearTimeout(timer);
  const events = stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  return { code, events, stderr };
}

async function metric(endpoint, status) {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { Authorization: `Bearer ${KEY}` } });
  assert.equal(res.status, 200);
  const text = await res.text();
  const line = text.split('\n').find((l) => l.startsWith(`flint_requests_total{endpoint="${endpoint}",status="${status}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

const answers = (r) => r.events.filter((e) => e.type === 'item.completed' && e.item.type === 'agent_message').map((e) => e.item.text);
const usage = (r) => r.events.find((e) => e.type === 'turn.completed')?.usage;
const why = (r) => `exit ${r.code}\n${JSON.stringify(r.events, null, 1)}\n${r.stderr.slice(-2000)}`;

test('codex exec over HTTP/SSE shows the answer', async () => {
  const sse = await metric('/v1/responses', 200);
  const r = await codex(['Say hello.'], { websocket: false });
  assert.equal(r.code, 0, why(r));
  assert.deepEqual(answers(r), [SCRIPT], why(r));
  const u = usage(r);
  assert.ok(u.input_tokens > 1000, `Codex's instructions and tools were the prompt: ${JSON.stringify(u)}`);
  assert.ok(u.output_tokens > 0);
  assert.ok(await metric('/v1/responses', 200) > sse, 'the request came over HTTP');
});

test('codex exec over the Responses WebSocket: warm-up, then the turn on the cached prompt', async () => {
  const ws = await metric('/v1/responses (websocket)', 200);
  const sse = await metric('/v1/responses', 200);
  const r = await codex(['Say hello again.'], { websocket: true });
  assert.equal(r.code, 0, why(r));
  assert.deepEqual(answers(r), [SCRIPT], why(r));
  // Codex sends a generate:false warm-up (its instructions and tools) first, then the turn chained on it
  // with the user's message: most of the turn's prompt is already in the KV cache.
  const u = usage(r);
  assert.ok(u.cached_input_tokens > u.input_tokens / 2, `prompt cached: ${JSON.stringify(u)}`);
  assert.ok(await metric('/v1/responses (websocket)', 200) >= ws + 2, 'warm-up and turn over the WebSocket');
  assert.equal(await metric('/v1/responses', 200), sse, 'no HTTP fallback');
});

test('codex exec resume continues a thread with its history', async () => {
  const first = await codex(['Say hello.'], { websocket: true });
  assert.equal(first.code, 0, why(first));
  const thread = first.events.find((e) => e.type === 'thread.started')?.thread_id;
  assert.ok(thread, why(first));
  const r = await codex(['resume', thread, 'And once more.'], { websocket: true });
  assert.equal(r.code, 0, why(r));
  assert.deepEqual(answers(r), [SCRIPT], why(r));
  assert.ok(usage(r).input_tokens > usage(first).input_tokens, 'the second turn carries the first');
});

test('a wrong key: Codex reports the server\'s 401 and its message', async () => {
  const refused = await metric('/v1/responses', 401);
  const r = await codex(['Say hello.'], { websocket: true, key: 'sk-wrong' });
  const failed = r.events.find((e) => e.type === 'turn.failed');
  assert.ok(failed, why(r));
  assert.match(failed.error.message, /401/);
  assert.match(failed.error.message, /Incorrect API key/);
  assert.deepEqual(answers(r), []);
  assert.ok(await metric('/v1/responses', 401) > refused);
});
