// The official `openai` npm package, unmodified, against a real `flint serve` (stories260K).
// Run: FLINT_BINARY=build/flint node --test   (CTest does this; `npm ci` first installs the SDK).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { ResponsesWS } from 'openai/resources/responses/ws';
import { startServe, writeScriptedModel } from '../flint_serve.mjs';

const BINARY = process.env.FLINT_BINARY;
const MODEL_PATH = process.env.FLINT_MODEL; // stories260K.gguf
const KEY = 'sk-flint-node-test';
const WORDS = 'Let me run it. ';
const CALL = '<tool_call>{"name":"exec_command","arguments":{"cmd": "echo flint-tool-ran"}}</tool_call>';
const ANSWER = 'Done: the command ran!';
const ARGS_REST = '{"cmd":"echo hi"}}\n</tool_call>';
const PARAMS = { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] };
let server;
let client;
let dir;

before(async () => {
  assert.ok(BINARY, 'set FLINT_BINARY to the flint executable');
  dir = mkdtempSync(join(tmpdir(), 'flint-node-'));
  const args = ['--store', join(dir, 'responses.db'), '--api-key', KEY, '-t', '1'];
  if (MODEL_PATH) args.push('-m', `stories=${MODEL_PATH}`);
  // A scripted model for function calling (`flint mkmodel --script`): a few words and a Qwen-style tool
  // call, then — once a tool's output (<tool_response>, token "_response") is in the context — an answer.
  const agent = join(dir, 'agent.gguf');
  writeScriptedModel(BINARY, agent, { script: WORDS + CALL, then: ANSWER, marker: '_response' });
  args.push('-m', `agent=${agent}`);
  // A model that only knows the rest of a call after its name ("args"): left alone it answers text that is
  // not JSON; a forced tool_choice makes it a call, json_object makes it one JSON object.
  const rest = join(dir, 'args.gguf');
  writeScriptedModel(BINARY, rest, { script: ARGS_REST });
  args.push('-m', `args=${rest}`);
  server = await startServe(BINARY, args);
  client = new OpenAI({ apiKey: KEY, baseURL: `http://127.0.0.1:${server.port}/v1`, maxRetries: 0 });
});

after(async () => {
  if (server) await server.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const model = () => (MODEL_PATH ? 'stories' : 'stories260K');

test('responses.create (JSON)', async () => {
  const r = await client.responses.create({ model: model(), input: 'Once upon a time', temperature: 0, max_output_tokens: 16 });
  assert.equal(r.object, 'response');
  assert.match(r.id, /^resp_/);
  assert.ok(r.output_text.length > 0, 'the SDK assembles output_text from the output items');
  assert.equal(typeof r.usage.input_tokens_details.cached_tokens, 'number');
  const again = await client.responses.retrieve(r.id);
  assert.equal(again.id, r.id);
});

test('responses.create (stream)', async () => {
  const stream = await client.responses.create({
    model: model(), input: 'Once upon a time', temperature: 0, max_output_tokens: 16, stream: true,
  });
  const types = [];
  let text = '';
  let final;
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === 'response.output_text.delta') text += ev.delta;
    if (ev.type === 'response.completed' || ev.type === 'response.incomplete') final = ev.response;
  }
  assert.equal(types[0], 'response.created');
  assert.ok(types.includes('response.output_text.done'));
  assert.ok(final && final.id);
  assert.equal(final.output[0].content[0].text, text);
});

test('Responses over WebSocket (ResponsesWS), chained turn with previous_response_id', async () => {
  const ws = new ResponsesWS(client);
  const done = (ev) => ev.type === 'response.completed' || ev.type === 'response.incomplete';
  const next = () => new Promise((resolve, reject) => {
    const onEvent = (ev) => {
      if (ev.type === 'error') { cleanup(); reject(new Error(JSON.stringify(ev))); }
      if (done(ev)) { cleanup(); resolve(ev.response); }
    };
    const onError = (err) => { cleanup(); reject(err); };
    const cleanup = () => { ws.off('event', onEvent); ws.off('error', onError); };
    ws.on('event', onEvent);
    ws.on('error', onError);
  });
  try {
    let p = next();
    ws.send({ type: 'response.create', model: model(), input: 'Once upon a time', temperature: 0, max_output_tokens: 12, store: false });
    const first = await p;
    assert.ok(first.output.length > 0);
    p = next();
    ws.send({
      type: 'response.create', model: model(), input: 'The sun was warm.', previous_response_id: first.id,
      temperature: 0, max_output_tokens: 8, store: false,
    });
    const second = await p;
    assert.equal(second.previous_response_id, first.id);
    assert.ok(second.usage.input_tokens_details.cached_tokens >= first.usage.total_tokens - 1,
      `cached ${second.usage.input_tokens_details.cached_tokens} of ${first.usage.total_tokens}`);
  } finally {
    ws.close();
  }
});

test('chat.completions.create (JSON and stream with usage)', async () => {
  const c = await client.chat.completions.create({
    model: model(), messages: [{ role: 'user', content: 'Once upon a time' }], temperature: 0, max_tokens: 12,
  });
  assert.equal(c.object, 'chat.completion');
  assert.ok(c.choices[0].message.content.length > 0);
  const stream = await client.chat.completions.create({
    model: model(), messages: [{ role: 'user', content: 'Once upon a time' }], temperature: 0, max_tokens: 12,
    stream: true, stream_options: { include_usage: true },
  });
  let text = '';
  let usage;
  for await (const chunk of stream) {
    if (chunk.choices.length) text += chunk.choices[0].delta.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  assert.ok(text.length > 0);
  assert.ok(usage && usage.completion_tokens > 0);
});

test('function calling over Responses: the SDK gets a function_call item, sends the output back', async () => {
  const tools = [{ type: 'function', name: 'exec_command', description: 'Runs a shell command.', parameters: PARAMS }];
  const r = await client.responses.create({ model: 'agent', input: 'Run echo.', tools });
  assert.equal(r.output_text, WORDS);
  const call = r.output.find((o) => o.type === 'function_call');
  assert.ok(call, JSON.stringify(r.output));
  assert.equal(call.name, 'exec_command');
  assert.deepEqual(JSON.parse(call.arguments), { cmd: 'echo flint-tool-ran' });
  const r2 = await client.responses.create({
    model: 'agent', previous_response_id: r.id, tools,
    input: [{ type: 'function_call_output', call_id: call.call_id, output: 'flint-tool-ran' }],
  });
  assert.equal(r2.output_text, ANSWER);
  assert.equal(r2.output.filter((o) => o.type === 'function_call').length, 0);
});

test('function calling over Chat Completions: the SDK stream helper assembles the streamed call', async () => {
  const tools = [{ type: 'function', function: { name: 'exec_command', parameters: PARAMS } }];
  const messages = [{ role: 'user', content: 'Run echo.' }];
  const stream = client.chat.completions.stream({ model: 'agent', messages, tools });
  let deltas = 0;
  stream.on('content', () => { deltas += 1; });
  const done = await stream.finalChatCompletion();
  const msg = done.choices[0].message;
  assert.equal(msg.content, WORDS);
  assert.ok(deltas >= 4, `the words streamed (${deltas} content events)`);
  assert.equal(done.choices[0].finish_reason, 'tool_calls');
  assert.equal(msg.tool_calls.length, 1);
  assert.equal(msg.tool_calls[0].function.name, 'exec_command');
  assert.deepEqual(JSON.parse(msg.tool_calls[0].function.arguments), { cmd: 'echo flint-tool-ran' });
  const next = await client.chat.completions.create({
    model: 'agent', tools,
    messages: [...messages, msg, { role: 'tool', tool_call_id: msg.tool_calls[0].id, content: 'flint-tool-ran' }],
  });
  assert.equal(next.choices[0].message.content, ANSWER);
  assert.equal(next.choices[0].finish_reason, 'stop');
});

test('deprecated functions through the SDK: the stream helper assembles function_call, the result goes back as role function', async () => {
  const functions = [{ name: 'exec_command', parameters: PARAMS }];
  const messages = [{ role: 'user', content: 'Run echo.' }];
  const stream = client.chat.completions.stream({ model: 'agent', messages, functions });
  const done = await stream.finalChatCompletion();
  const msg = done.choices[0].message;
  assert.equal(done.choices[0].finish_reason, 'function_call');
  assert.equal(msg.function_call.name, 'exec_command');
  assert.deepEqual(JSON.parse(msg.function_call.arguments), { cmd: 'echo flint-tool-ran' });
  assert.ok(!msg.tool_calls || msg.tool_calls.length === 0, 'the old form has no tool_calls');
  const next = await client.chat.completions.create({
    model: 'agent', functions,
    messages: [...messages, msg, { role: 'function', name: 'exec_command', content: 'flint-tool-ran' }],
  });
  assert.equal(next.choices[0].message.content, ANSWER);
  assert.equal(next.choices[0].finish_reason, 'stop');
});

test('responses.inputTokens.count: the prompt a create with the same body prefills, tools and history included', async () => {
  const body = { model: 'agent', instructions: 'Be brief.', input: 'Run echo.', tools: [{ type: 'function', name: 'exec_command', parameters: PARAMS }] };
  const counted = await client.responses.inputTokens.count(body);
  assert.equal(counted.object, 'response.input_tokens');
  const r = await client.responses.create({ ...body, max_output_tokens: 1 });
  assert.equal(counted.input_tokens, r.usage.input_tokens);
  const next = await client.responses.inputTokens.count({ previous_response_id: r.id, input: 'And then?' });
  assert.ok(next.input_tokens > r.usage.total_tokens, `${next.input_tokens} counts the history`);
  await assert.rejects(client.responses.inputTokens.count({ model: 'nope', input: 'x' }), (e) => e.status === 404);
});

test('a wrong key is an AuthenticationError', async () => {
  const bad = new OpenAI({ apiKey: 'sk-wrong', baseURL: client.baseURL, maxRetries: 0 });
  await assert.rejects(bad.responses.create({ model: model(), input: 'x' }), (e) => e.status === 401);
});

test('json_object output through the SDK: a parseable object on both APIs', async () => {
  const messages = [{ role: 'user', content: 'JSON please.' }];
  const free = await client.chat.completions.create({ model: 'args', messages, temperature: 0, max_tokens: 64 });
  assert.throws(() => JSON.parse(free.choices[0].message.content), 'left alone the answer is not JSON');
  const c = await client.chat.completions.create({
    model: 'args', messages, temperature: 0, max_tokens: 64, response_format: { type: 'json_object' },
  });
  assert.equal(c.choices[0].finish_reason, 'stop');
  const obj = JSON.parse(c.choices[0].message.content);
  assert.equal(typeof obj, 'object');
  assert.ok(obj && !Array.isArray(obj));
  const r = await client.responses.create({
    model: 'args', input: 'JSON please.', temperature: 0, max_output_tokens: 64, text: { format: { type: 'json_object' } },
  });
  assert.equal(r.output_text, c.choices[0].message.content, 'the same constrained draw on both APIs');
});

test('json_schema output through the SDK parse helpers: Chat message.parsed, Responses output_parsed', async () => {
  const schema = {
    type: 'object', additionalProperties: false, required: ['answer', 'ok', 'why'],
    properties: { answer: { type: 'integer' }, ok: { type: 'boolean' }, why: { enum: ['x', 'yy'] } },
  };
  const fits = (o) => Number.isInteger(o.answer) && typeof o.ok === 'boolean' && ['x', 'yy'].includes(o.why)
    && Object.keys(o).length === 3;
  const c = await client.chat.completions.parse({
    model: 'args', messages: [{ role: 'user', content: 'JSON please.' }], temperature: 0, max_tokens: 64,
    response_format: { type: 'json_schema', json_schema: { name: 'verdict', strict: true, schema } },
  });
  assert.equal(c.choices[0].finish_reason, 'stop');
  const parsed = c.choices[0].message.parsed;
  assert.ok(parsed && fits(parsed), JSON.stringify(parsed));
  const r = await client.responses.parse({
    model: 'args', input: 'JSON please.', temperature: 0, max_output_tokens: 64,
    text: { format: { type: 'json_schema', name: 'verdict', strict: true, schema } },
  });
  assert.ok(r.output_parsed && fits(r.output_parsed), JSON.stringify(r.output_parsed));
  await assert.rejects(
    client.responses.create({
      model: 'args', input: 'x',
      text: { format: { type: 'json_schema', name: 'zip', schema: { type: 'object', properties: { zip: { type: 'string', pattern: '^[0-9]{5}$' } } } } },
    }),
    (e) => e.status === 400 && e.param === 'text.format.schema.properties.zip.pattern',
  );
});

test('tool_choice through the SDK: a named function makes the answer that call (Chat stream helper, Responses)', async () => {
  const tools = [{ type: 'function', function: { name: 'exec_command', parameters: PARAMS } }];
  const stream = client.chat.completions.stream({
    model: 'args', messages: [{ role: 'user', content: 'Say hi.' }], tools,
    tool_choice: { type: 'function', function: { name: 'exec_command' } },
  });
  const done = await stream.finalChatCompletion();
  assert.equal(done.choices[0].finish_reason, 'tool_calls');
  const calls = done.choices[0].message.tool_calls;
  assert.equal(calls.length, 1);
  assert.equal(calls[0].function.name, 'exec_command');
  assert.deepEqual(JSON.parse(calls[0].function.arguments), { cmd: 'echo hi' });
  const rtools = [{ type: 'function', name: 'exec_command', parameters: PARAMS }];
  const r = await client.responses.create({
    model: 'args', input: 'Say hi.', tools: rtools, tool_choice: { type: 'function', name: 'exec_command' },
  });
  assert.equal(r.output.length, 1);
  assert.equal(r.output[0].type, 'function_call');
  assert.deepEqual(JSON.parse(r.output[0].arguments), { cmd: 'echo hi' });
  const auto = await client.responses.create({ model: 'args', input: 'Say hi.', tools: rtools });
  assert.equal(auto.output[0].type, 'message', 'left to auto the same model answers text');
  await assert.rejects(
    client.responses.create({ model: 'args', input: 'x', tools: rtools, tool_choice: { type: 'function', name: 'nope' } }),
    (e) => e.status === 400 && e.param === 'tool_choice',
  );
});

test('logprobs through the SDK: Chat, legacy Completions and Responses spell the text', async () => {
  const c = await client.chat.completions.create({
    model: model(), messages: [{ role: 'user', content: 'Once upon a time' }], temperature: 0, max_tokens: 12,
    logprobs: true, top_logprobs: 2,
  });
  const entries = c.choices[0].logprobs.content;
  assert.equal(entries.map((e) => e.token).join(''), c.choices[0].message.content);
  for (const e of entries) {
    assert.ok(e.logprob <= 0);
    assert.equal(e.top_logprobs.length, 2);
    assert.ok(e.top_logprobs[0].logprob >= e.logprob - 1e-6, 'greedy: the chosen token is the most likely');
  }
  const legacy = await client.completions.create({
    model: model(), prompt: 'Once upon a time', temperature: 0, max_tokens: 8, logprobs: 2,
  });
  const lp = legacy.choices[0].logprobs;
  assert.equal(lp.tokens.join(''), legacy.choices[0].text);
  assert.equal(lp.token_logprobs.length, lp.tokens.length);
  assert.equal(lp.text_offset.length, lp.tokens.length);
  const r = await client.responses.create({
    model: model(), input: 'Once upon a time', temperature: 0, max_output_tokens: 8,
    include: ['message.output_text.logprobs'],
  });
  const part = r.output[0].content[0];
  assert.equal(part.logprobs.map((e) => e.token).join(''), part.text);
});

test('logit_bias through the SDK: a +100 bias makes one token the whole answer', async () => {
  const req = { model: model(), messages: [{ role: 'user', content: 'Once upon a time' }], temperature: 0, max_tokens: 6, logprobs: true };
  const plain = await client.chat.completions.create(req);
  const biased = await client.chat.completions.create({ ...req, logit_bias: { 300: 100 } });
  const tokens = biased.choices[0].logprobs.content.map((e) => e.token);
  assert.equal(tokens.length, 6);
  assert.ok(tokens.every((t) => t === tokens[0]), JSON.stringify(tokens));
  assert.notEqual(biased.choices[0].message.content, plain.choices[0].message.content);
  await assert.rejects(
    client.chat.completions.create({ ...req, logit_bias: { 999999: 1 } }),
    (e) => e.status === 400 && /logit_bias/.test(e.message),
  );
});

test('n choices through the SDK: Chat (JSON and the stream helper) and legacy Completions', async () => {
  const messages = [{ role: 'user', content: 'Once upon a time' }];
  const c = await client.chat.completions.create({ model: model(), messages, n: 3, seed: 4, max_tokens: 8 });
  assert.deepEqual(c.choices.map((x) => x.index), [0, 1, 2]);
  const one = await client.chat.completions.create({ model: model(), messages, n: 1, seed: 5, max_tokens: 8 });
  assert.equal(c.choices[1].message.content, one.choices[0].message.content, 'choice 1 is seed + 1');
  const stream = client.chat.completions.stream({ model: model(), messages, n: 3, seed: 4, max_tokens: 8 });
  const done = await stream.finalChatCompletion();
  assert.deepEqual(done.choices.map((x) => x.message.content), c.choices.map((x) => x.message.content));
  const legacy = await client.completions.create({ model: model(), prompt: 'Once upon a time', n: 2, seed: 4, max_tokens: 8 });
  assert.equal(legacy.choices.length, 2);
  assert.ok(legacy.choices.every((x) => x.text.length > 0));
});

test('background responses through the SDK: created in progress, retrieved until done', async () => {
  const r = await client.responses.create({ model: model(), input: 'Once upon a time', max_output_tokens: 64, background: true });
  assert.equal(r.background, true);
  assert.ok(['queued', 'in_progress', 'completed', 'incomplete'].includes(r.status), r.status);
  let got = r;
  for (let i = 0; i < 500 && (got.status === 'queued' || got.status === 'in_progress'); i += 1) {
    await new Promise((res) => setTimeout(res, 10));
    got = await client.responses.retrieve(r.id);
  }
  assert.equal(got.status, 'incomplete');
  assert.equal(got.usage.output_tokens, 64);
  assert.ok(got.output_text.length > 0);
});
