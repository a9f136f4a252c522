// Write dsh sessions with the real persistence plugin, for the dsh session reader's tests.
//
//   node write_sessions.mjs ROOT SCENARIO [--compression zstd|none] [--no-pack]
//
// Runs @deepseek-ai/dsh-session's SessionStore and @deepseek-ai/dsh-session-persistence-jsonl
// in a cordis Context (as dsh composes them), creates one session and appends the scenario's
// events in batches, flushing after each batch so every batch becomes one durable append
// (one Zstandard frame). Prints {"path": <session file>, "id": <session id>} on stdout.
import { Context } from '@deepseek-ai/cordis';
import { SessionStore } from '@deepseek-ai/dsh-session';
import { JsonlSessionPersistence } from '@deepseek-ai/dsh-session-persistence-jsonl';
import { createUserMessage, createAssistantMessage, createToolResultMessage, CallId } from '@deepseek-ai/dsh-llm';

const [root, scenario, ...flags] = process.argv.slice(2);
const compression = flags.includes('--compression') ? flags[flags.indexOf('--compression') + 1] : 'zstd';
const packChunks = !flags.includes('--no-pack');
const cwd = process.env.DSH_SESSION_CWD ?? '/work/acme-api';

const ctx = new Context();
ctx.plugin(SessionStore);
ctx.plugin(JsonlSessionPersistence, { root, compression, packChunks, writeBatchMaxDelayMs: 1 });
await ctx.events.flush?.();
await new Promise((r) => setTimeout(r, 50));

const session = ctx.sessions.create(process.env.DSH_SESSION_ID ?? `s-${scenario}`, { meta: { cwd } });
const provider = { provider: 'scripted', model: 'scripted' };

function user(text) {
  session.append('user/message', createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'user' } }), { surfaceOp: 'append' });
}
function notice(text) {
  session.append('user/message', createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'plugin', plugin: 'hooks-codex' } }), { surfaceOp: 'append' });
}
function chunks(turn, step, texts) {
  for (const text of texts) session.append('assistant/chunk', { turn, step, chunk: { type: 'text-delta', index: 0, text } });
}
// nameOn: 'all' (every delta names the tool), 'none' (none does), 'first' (only the first).
function toolChunks(turn, step, id, name, args, nameOn = 'all') {
  args.forEach((argumentsDelta, k) => {
    const named = nameOn === 'all' || (nameOn === 'first' && k === 0);
    const chunk = named ? { type: 'tool-call-delta', index: 1, id, name, argumentsDelta } : { type: 'tool-call-delta', index: 1, id, argumentsDelta };
    session.append('assistant/chunk', { turn, step, chunk });
  });
}
function reasoning(turn, step, texts) {
  for (const text of texts) session.append('assistant/chunk', { turn, step, chunk: { type: 'reasoning-delta', index: 0, text } });
}
function say(turn, step, text) {
  session.append('assistant/message', { turn, step, message: createAssistantMessage({ content: [{ type: 'text', text }], source: provider }) }, { surfaceOp: 'append' });
}
function callTool(turn, step, id, name, args) {
  const callId = CallId(id);
  const argText = JSON.stringify(args);
  session.append('assistant/message', { turn, step, message: createAssistantMessage({ content: [{ type: 'tool-call', id: callId, name, arguments: argText }], source: provider }) }, { surfaceOp: 'append' });
  session.append('tool/call', { turn, step, callId, name, arguments: argText });
}
function result(turn, step, id, text, isError = false, error) {
  const data = { turn, step, message: createToolResultMessage({ callId: CallId(id), content: [{ type: 'text', text }], isError }) };
  if (error) data.error = error;
  session.append('tool/result', data, { surfaceOp: 'append' });
}
async function batch(fn) {
  fn();
  await ctx.sessions.flush(session);
}

const scenarios = {
  // Wrote a file, ran nothing: rung 2.
  edit_only: async () => {
    await batch(() => { session.append('turn/start', { turn: 0 }); user('add calc.py'); session.append('step/start', { turn: 0, step: 0 }); });
    await batch(() => { chunks(0, 0, ['I will ', 'write ', 'the ', 'file.']); toolChunks(0, 0, 'c1', 'write', ['{"file_path":', '"calc.py",', '"content":"x = 1\\n"}'], 'all'); callTool(0, 0, 'c1', 'write', { file_path: 'calc.py', content: 'x = 1\n' }); });
    await batch(() => { result(0, 0, 'c1', 'Wrote calc.py'); session.append('step/end', { turn: 0, step: 0 }); session.append('step/start', { turn: 0, step: 1 }); });
    await batch(() => { reasoning(0, 1, ['Thinking ', 'about ', 'it.']); chunks(0, 1, ['Done: ', 'I added ', 'calc.py.']); say(0, 1, 'Done: I added calc.py.'); session.append('step/end', { turn: 0, step: 1 }); session.append('turn/end', { turn: 0, reason: { kind: 'completed' } }); });
  },
  // Wrote a file, then pytest passed: rung 3.
  verified: async () => {
    await batch(() => { session.append('turn/start', { turn: 0 }); user('add calc.py with a test'); session.append('step/start', { turn: 0, step: 0 }); });
    await batch(() => { callTool(0, 0, 'c1', 'edit', { file_path: 'calc.py', old_string: 'x = 1', new_string: 'x = 2' }); result(0, 0, 'c1', 'Edited calc.py'); });
    await batch(() => { toolChunks(0, 0, 'c2', 'bash', ['{"command":', '"pytest -q",', '"description":"Run the tests"}'], 'none'); toolChunks(0, 0, 'c2', 'bash', ['{}'], 'first'); callTool(0, 0, 'c2', 'bash', { command: 'pytest -q', description: 'Run the tests' }); result(0, 0, 'c2', '1 passed in 0.01s'); });
    await batch(() => { say(0, 1, 'Done: the test passes.'); session.append('turn/end', { turn: 0, reason: { kind: 'completed' } }); });
  },
  // The last check failed: rung 2, failed.
  failed: async () => {
    await batch(() => { session.append('turn/start', { turn: 0 }); user('fix the bug'); });
    await batch(() => { callTool(0, 0, 'c1', 'str_replace_editor', { command: 'str_replace', path: '/work/acme-api/calc.py', old_str: 'a', new_str: 'b' }); result(0, 0, 'c1', 'The file has been edited.'); });
    await batch(() => { callTool(0, 0, 'c2', 'bash', { command: 'pytest -q', description: 'Run the tests' }); result(0, 0, 'c2', '1 failed in 0.02s\n[exit code: 1]'); });
    await batch(() => { notice('<hook_prompt>stop hook says run it again</hook_prompt>'); say(0, 1, 'Done.'); session.append('turn/end', { turn: 0, reason: { kind: 'completed' } }); });
  },
  // A background run whose exit code arrives through job_output.
  background: async () => {
    await batch(() => { session.append('turn/start', { turn: 0 }); user('run the build in the background'); });
    await batch(() => { callTool(0, 0, 'c1', 'write', { file_path: 'main.go', content: 'package main\n' }); result(0, 0, 'c1', 'Wrote main.go'); });
    await batch(() => { callTool(0, 0, 'c2', 'bash', { command: 'go build ./...', description: 'Build', run_in_background: true }); result(0, 0, 'c2', 'started background job j1'); });
    await batch(() => { callTool(0, 1, 'c3', 'job_output', { jobId: 'j1' }); result(0, 1, 'c3', '(no new output)\ncompleted: exit code: 0'); });
    await batch(() => { say(0, 2, 'Done: it builds.'); session.append('turn/end', { turn: 0, reason: { kind: 'completed' } }); });
  },
  // The user aborted while the tests were running.
  aborted: async () => {
    await batch(() => { session.append('turn/start', { turn: 0 }); user('fix it'); });
    await batch(() => { callTool(0, 0, 'c1', 'edit', { file_path: 'calc.py', old_string: 'a', new_string: 'b' }); result(0, 0, 'c1', 'x', true, { name: 'FsError', code: 'FS_NOT_FOUND' }); });
    await batch(() => { callTool(0, 0, 'c2', 'write', { file_path: 'calc.py', content: 'b' }); result(0, 0, 'c2', 'Wrote calc.py'); });
    await batch(() => { callTool(0, 0, 'c3', 'bash', { command: 'pytest -q', description: 'Run the tests' }); session.append('turn/end', { turn: 0, reason: { kind: 'aborted', reason: { kind: 'user' } } }); });
  },
};

if (!(scenario in scenarios)) { console.error(`unknown scenario ${scenario}`); process.exit(2); }
await scenarios[scenario]();
await ctx.sessions.flush(session);
console.log(JSON.stringify({ id: session.id }));
await ctx.stop?.();
process.exit(0);
