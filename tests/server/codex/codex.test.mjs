// The official Codex CLI (npm @openai/codex), unmodified, against a real `flint serve`: Codex's agent loop
// over HTTP/SSE and over the Responses WebSocket, a resumed thread, and a refused key. The model is a
// scripted one (`flint mkmodel --script … --then … --marker _response`): the real engine runs Codex's whole
// prompt (~6k tokens of instructions and tools) and answers with a tool call (Qwen's <tool_call>, which
// flint turns into a function_call item); Codex runs the command and sends its output back; with the
// output in the conversation (flint renders it as <tool_response>) the model writes its final answer.
// Run: FLINT_BINARY=build/flint node --test   (CTest does this; `npm ci` here first installs Codex).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServe, writeScriptedModel } from '../flint_serve.mjs';

const BINARY = process.env.FLINT_BINARY;
const CODEX = join(dirname(fileURLToPath(import.meta.url)), 'node_modules', '.bin', 'codex');
const CALL = '<tool_call>{"name":"exec_command","arguments":{"cmd": "echo flint-tool-ran"}}</tool_call>';
const ANSWER = 'Done: the command ran.';
const KEY = 'sk-flint-codex-test';
let server;
let port;
let dir;

before(async () => {
  assert.ok(BINARY, 'set FLINT_BINARY to the flint executable');
  dir = mkdtempSync(join(tmpdir(), 'flint-codex-'));
  const model = join(dir, 'scripted.gguf');
  writeScriptedModel(BINARY, model, { script: CALL, then: ANSWER, marker: '_response' });
  server = await startServe(BINARY, ['--ctx', '32768', '-t', '1', '--store', join(dir, 'responses.db'),
    '--api-key', KEY, '-m', `scripted=${model}`]);
  port = server.port;
  mkdirSync(join(dir, 'work'));
});

after(async () => {
  if (server) await server.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// `codex exec --json …` against the server: its exit code and its JSONL events.
async function codex(rest, { websocket, key = KEY }) {
  const provider = `model_providers.flint={name="flint", base_url="http://127.0.0.1:${port}/v1", ` +
    `wire_api="responses", env_key="FLINT_TEST_KEY", supports_websockets=${websocket}, ` +
    'request_max_retries=0, stream_max_retries=0}';
  // No sandbox: the one command is the model's fixed `echo`, in a temporary directory (Codex's bubblewrap
  // sandbox needs user namespaces, which a CI container may not have).
  const args = ['exec', '--json', '--skip-git-repo-check', '-s', 'danger-full-access', '-C', join(dir, 'work'),
    '-c', 'model_provider=flint',
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

const commands = (r) => r.events.filter((e) => e.type === 'item.completed' && e.item.type === 'command_execution').map((e) => e.item);

// One agent turn: the model's tool call ran (its output is Codex's, not the model's), then the answer.
function assertAgentTurn(r) {
  assert.equal(r.code, 0, why(r));
  const ran = commands(r);
  assert.equal(ran.length, 1, why(r));
  assert.match(ran[0].command, /echo flint-tool-ran/);
  assert.equal(ran[0].exit_code, 0, why(r));
  assert.equal(ran[0].aggregated_output.trim(), 'flint-tool-ran');
  assert.deepEqual(answers(r), [ANSWER], why(r));
}

test('codex exec over HTTP/SSE: tool call, command, final answer', async () => {
  const sse = await metric('/v1/responses', 200);
  const r = await codex(['Print something.'], { websocket: false });
  assertAgentTurn(r);
  const u = usage(r);
  assert.ok(u.input_tokens > 2000, `Codex's instructions and tools were the prompt, twice: ${JSON.stringify(u)}`);
  assert.ok(u.output_tokens > 0);
  assert.ok(await metric('/v1/responses', 200) >= sse + 2, 'the tool call and the answer came over HTTP');
});

test('codex exec over the Responses WebSocket: warm-up, tool call and answer on the cached prompt', async () => {
  const ws = await metric('/v1/responses (websocket)', 200);
  const sse = await metric('/v1/responses', 200);
  const r = await codex(['Print something again.'], { websocket: true });
  assertAgentTurn(r);
  // Codex sends a generate:false warm-up (its instructions and tools) first, then the turn chained on it,
  // then the tool's output chained on the turn: most of each prompt is already in the KV cache.
  const u = usage(r);
  assert.ok(u.cached_input_tokens > u.input_tokens / 2, `prompt cached: ${JSON.stringify(u)}`);
  assert.ok(await metric('/v1/responses (websocket)', 200) >= ws + 3, 'warm-up, turn and tool output over the WebSocket');
  assert.equal(await metric('/v1/responses', 200), sse, 'no HTTP fallback');
});

test('codex exec resume continues a thread with its history', async () => {
  const first = await codex(['Print something.'], { websocket: true });
  assertAgentTurn(first);
  const thread = first.events.find((e) => e.type === 'thread.started')?.thread_id;
  assert.ok(thread, why(first));
  const r = await codex(['resume', thread, 'And once more.'], { websocket: true });
  assert.equal(r.code, 0, why(r));
  // The model answers without a new call only if the prompt holds the earlier tool output: the thread's
  // history went with the resumed turn.
  assert.deepEqual(commands(r), [], why(r));
  assert.deepEqual(answers(r), [ANSWER], why(r));
});

test('codex exec --output-schema: the tool is still called, and the final answer fits the schema', async () => {
  // Codex sends the schema as text.format on every request of the turn; flint lets the answer be a call or
  // JSON that fits. The scripted model's own final words are not JSON: constrained, they are.
  const schema = {
    type: 'object', additionalProperties: false, required: ['status'],
    properties: { status: { type: 'string', enum: ['done', 'failed'] } },
  };
  const file = join(dir, 'schema.json');
  writeFileSync(file, JSON.stringify(schema));
  const r = await codex(['--output-schema', file, 'Print something.'], { websocket: true });
  assert.equal(r.code, 0, why(r));
  assert.equal(commands(r).length, 1, why(r));
  const final = answers(r);
  assert.equal(final.length, 1, why(r));
  const parsed = JSON.parse(final[0]);
  assert.deepEqual(Object.keys(parsed), ['status'], why(r));
  assert.ok(['done', 'failed'].includes(parsed.status), why(r));
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
