// The official OpenAI Agents SDK (npm @openai/agents), unmodified, against a real `flint serve`: an agent's
// tool loop over the Responses API by HTTP (JSON and SSE), over the Responses WebSocket (the SDK's
// OpenAIResponsesWSModel and withResponsesWebSocketSession: one socket for every turn), over Chat
// Completions, structured output from a zod schema, and a refused key on both transports.
// The models are scripted (`flint mkmodel --script`): `tools` answers with a Qwen <tool_call> until the
// tool's output is in its context (flint renders it as <tool_response>), then with its final answer; `json`
// answers with one JSON object. So what the SDK should end up with is known, and every step of its loop
// (the call, running the tool, sending the output back) has to work for the test to pass.
// Run: FLINT_BINARY=build/flint node --test   (CTest does this via run.sh; `npm ci` here first).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { z } from 'zod';
import {
  Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, OpenAIResponsesWSModel, run, setTracingDisabled, tool,
  withResponsesWebSocketSession,
} from '@openai/agents';
import { startServe, writeScriptedModel } from '../flint_serve.mjs';

const BINARY = process.env.FLINT_BINARY;
const KEY = 'sk-flint-agents-test';
const ANSWER = 'It is sunny in Oslo.';
let server;
let dir;
let client;

setTracingDisabled(true);  // the SDK would otherwise export traces to api.openai.com

before(async () => {
  assert.ok(BINARY, 'set FLINT_BINARY to the flint executable');
  assert.equal(typeof WebSocket, 'function', 'the SDK needs a global WebSocket (Node 22, or 20 with --experimental-websocket; run.sh sets it)');
  dir = mkdtempSync(join(tmpdir(), 'flint-agents-'));
  writeScriptedModel(BINARY, join(dir, 'tools.gguf'), {
    script: '<tool_call>{"name":"get_weather","arguments":{"city": "Oslo"}}</tool_call>', then: ANSWER, marker: '_response',
  });
  writeScriptedModel(BINARY, join(dir, 'json.gguf'), { script: '{"city": "Oslo","sky":"sunny"}' });
  server = await startServe(BINARY, ['--ctx', '8192', '-t', '1', '--no-store', '--api-key', KEY,
    '-m', `tools=${join(dir, 'tools.gguf')}`, '-m', `json=${join(dir, 'json.gguf')}`]);
  client = new OpenAI({ baseURL: `http://127.0.0.1:${server.port}/v1`, apiKey: KEY, maxRetries: 0 });
});

after(async () => {
  if (server) await server.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// The weather tool, recording each call's arguments.
function weatherTool(calls) {
  return tool({
    name: 'get_weather',
    description: 'The weather in a city.',
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }) => { calls.push(city); return `sunny in ${city}`; },
  });
}

async function metrics() {
  const res = await fetch(`http://127.0.0.1:${server.port}/metrics`, { headers: { Authorization: `Bearer ${KEY}` } });
  assert.equal(res.status, 200);
  const text = await res.text();
  const value = (series) => {
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return line ? Number(line.split(' ').pop()) : 0;
  };
  return {
    http: value('flint_requests_total{endpoint="/v1/responses",status="200"}'),
    ws: value('flint_requests_total{endpoint="/v1/responses (websocket)",status="200"}'),
    chat: value('flint_requests_total{endpoint="/v1/chat/completions",status="200"}'),
    sessions: value('flint_websocket_sessions_total'),
    open: value('flint_websocket_sessions'),
  };
}

// Runs the agent once, streamed or not (a streamed run is read to its end).
async function runAgent(agent, input, { stream = false, ...options } = {}) {
  if (!stream) return run(agent, input, options);
  const result = await run(agent, input, { ...options, stream: true });
  let events = 0;
  for await (const _ of result) events += 1;  // eslint-disable-line no-unused-vars
  await result.completed;
  assert.ok(events > 0, 'the streamed run yielded no events');
  return result;
}

// The tool loop, as each transport must carry it: the model's call, the tool run once with its arguments,
// the output sent back in a second request, the final answer.
function assertToolLoop(result, calls) {
  assert.equal(result.finalOutput, ANSWER);
  assert.deepEqual(calls, ['Oslo']);
  assert.equal(result.rawResponses.length, 2, 'one request for the call, one with its output');
  const kinds = result.newItems.map((i) => i.type);
  assert.deepEqual(kinds, ['tool_call_item', 'tool_call_output_item', 'message_output_item']);
  assert.equal(result.newItems[1].output, 'sunny in Oslo');
}

for (const stream of [false, true]) {
  test(`Responses over HTTP (${stream ? 'SSE' : 'JSON'}): the tool loop`, async () => {
    const calls = [];
    const agent = new Agent({ name: 'weather', instructions: 'Answer about the weather.', tools: [weatherTool(calls)],
      model: new OpenAIResponsesModel(client, 'tools') });
    const m0 = await metrics();
    const result = await runAgent(agent, 'What is the weather in Oslo?', { stream });
    assertToolLoop(result, calls);
    const m1 = await metrics();
    assert.equal(m1.http - m0.http, 2);
    assert.equal(m1.ws - m0.ws, 0);
  });

  test(`Responses over the WebSocket (${stream ? 'streamed run' : 'run'}): the tool loop on one socket`, async () => {
    const calls = [];
    const model = new OpenAIResponsesWSModel(client, 'tools');
    const agent = new Agent({ name: 'weather', instructions: 'Answer about the weather.', tools: [weatherTool(calls)], model });
    const m0 = await metrics();
    const result = await runAgent(agent, 'What is the weather in Oslo?', { stream });
    assertToolLoop(result, calls);
    const m1 = await metrics();
    assert.equal(m1.ws - m0.ws, 2, 'both model calls went over the WebSocket');
    assert.equal(m1.http - m0.http, 0, 'no model call fell back to HTTP');
    assert.equal(m1.sessions - m0.sessions, 1, 'the two calls shared one socket');
    await model.close?.();
  });
}

test('withResponsesWebSocketSession: a chained second turn on the same socket, its history cached', async () => {
  const calls = [];
  const m0 = await metrics();
  await withResponsesWebSocketSession(async ({ run: runInSession }) => {
    const agent = new Agent({ name: 'weather', instructions: 'Answer about the weather.', tools: [weatherTool(calls)], model: 'tools' });
    const first = await runInSession(agent, 'What is the weather in Oslo?');
    assertToolLoop(first, calls);
    const second = await runInSession(agent, 'And tomorrow?', { previousResponseId: first.lastResponseId });
    // The tool's output is in the chained history, so the scripted model answers at once.
    assert.equal(second.finalOutput, ANSWER);
    assert.equal(second.rawResponses.length, 1);
    const usage = second.rawResponses[0].usage;
    const cached = usage.inputTokensDetails.reduce((n, d) => n + (d.cached_tokens ?? 0), 0);
    assert.ok(cached > 0 && cached < usage.inputTokens, `the second turn reused the first's KV: ${JSON.stringify(usage)}`);
    const during = await metrics();
    assert.equal(during.ws - m0.ws, 3);
    assert.equal(during.sessions - m0.sessions, 1, 'three model calls, one socket');
    assert.ok(during.open >= 1);
  }, { providerOptions: { openAIClient: client } });
  assert.deepEqual(calls, ['Oslo']);
});

for (const stream of [false, true]) {
  test(`Chat Completions (${stream ? 'stream' : 'JSON'}): the tool loop`, async () => {
    const calls = [];
    const agent = new Agent({ name: 'weather', instructions: 'Answer about the weather.', tools: [weatherTool(calls)],
      model: new OpenAIChatCompletionsModel(client, 'tools') });
    const m0 = await metrics();
    const result = await runAgent(agent, 'What is the weather in Oslo?', { stream });
    assert.equal(result.finalOutput, ANSWER);
    assert.deepEqual(calls, ['Oslo']);
    const m1 = await metrics();
    assert.equal(m1.chat - m0.chat, 2);
  });
}

test('structured output: a zod outputType arrives parsed, over HTTP and the WebSocket', async () => {
  const outputType = z.object({ city: z.string(), sky: z.string() });
  for (const model of [new OpenAIResponsesModel(client, 'json'), new OpenAIResponsesWSModel(client, 'json')]) {
    const agent = new Agent({ name: 'weather', instructions: 'Answer in JSON.', outputType, model });
    const result = await run(agent, 'What is the weather in Oslo?');
    assert.deepEqual(result.finalOutput, { city: 'Oslo', sky: 'sunny' });
    await model.close?.();
  }
});

test('a wrong key is refused on both transports, and the server goes on serving', async () => {
  const bad = new OpenAI({ baseURL: `http://127.0.0.1:${server.port}/v1`, apiKey: 'sk-wrong', maxRetries: 0 });
  const agent = new Agent({ name: 'weather', instructions: 'Answer.', model: new OpenAIResponsesModel(bad, 'tools') });
  await assert.rejects(run(agent, 'Hello'), (e) => e.status === 401 && /Incorrect API key/.test(e.message));
  // The upgrade with a wrong key is answered 401, so the WebSocket the SDK's transport opens (the global
  // one, with the key in its headers) fails before it opens. The SDK's own run is not used here: Node 20's
  // WebSocket never fires `close` after a refused handshake, and the SDK's connect waits for it, so that
  // run would hang against any server.
  const outcome = await new Promise((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}/v1/responses`, { headers: { Authorization: 'Bearer sk-wrong' } });
    ws.addEventListener('open', () => { ws.close(); resolve('open'); });
    ws.addEventListener('error', () => resolve('error'));
    setTimeout(() => resolve('timeout'), 10_000);
  });
  assert.equal(outcome, 'error');
  const calls = [];
  const good = new Agent({ name: 'weather', instructions: 'Answer.', tools: [weatherTool(calls)], model: new OpenAIResponsesWSModel(client, 'tools') });
  assertToolLoop(await run(good, 'What is the weather in Oslo?'), calls);
});
