// SPDX-License-Identifier: MIT
// The SDK socket's cases through the Node client (see scenarios.py, whose
// server set-up each case shares). usage: node scenarios.js CLIENT_DIR CASE
'use strict';
const assert = require('assert');
const net = require('net');
const shackle = require(process.argv[2]);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function expectError(code, p) {
  await assert.rejects(p, (e) => e instanceof shackle.ShackleError && e.code === code);
}

function raw(text) {
  return new Promise((resolve, reject) => {
    const s = net.createConnection(process.env.SHACKLE_SOCKET);
    let buf = '';
    s.setEncoding('utf8');
    const done = () => { s.destroy(); resolve(buf.split('\n').filter((l) => l).map((l) => JSON.parse(l))); };
    // the one answer, or whatever came before the server closed
    s.on('data', (d) => { buf += d; if (buf.includes('\n')) done(); });
    s.on('error', (e) => { if (e.code !== 'EPIPE' && e.code !== 'ECONNRESET') reject(e); });
    s.on('close', done);
    s.write(text, () => {});
  });
}

const cases = {
  async budget() {
    const c = await shackle.connect({ agentId: 'budget-agent' });
    await c.withCall('llm', { q: 1 }, { estimatedCostUsd: 0.4 }, async (call) => { call.actualCostUsd = 0.7; });
    let ran = false;
    const llm = c.guard('llm', async () => { ran = true; }, { cost: 0.4 });
    await assert.rejects(llm({ q: 2 }), (e) => e instanceof shackle.Denied && e.code.startsWith('budget_'));
    assert.strictEqual(ran, false, 'the tool ran although denied');
    const st = await c.state();
    assert.ok(Math.abs(st.budget_spent_usd - 0.7) < 1e-9, JSON.stringify(st));
    c.close();
  },
  async repeat() {
    const c = await shackle.connect({ agentId: 'repeat-agent' });
    for (let i = 0; i < 2; i++) assert.strictEqual((await c.preExec('web_search', { q: 'same' })).verdict, 'ALLOW');
    const third = await c.preExec('web_search', { q: 'same' });
    assert.strictEqual(third.deny_reason, 'max_repeat_exceeded');
    assert.strictEqual((await c.preExec('other_tool', {})).deny_reason, 'circuit_open');
    c.close();
  },
  async replay() {
    const c = await shackle.connect({ agentId: 'replay-agent' });
    assert.strictEqual((await c.preExec('read_file', { path: 'a' }, { nonce: '9007199254740993' })).nonce,
      '9007199254740993', 'a nonce above 2^53 came back changed');
    const again = await c.preExec('read_file', { path: 'b' }, { nonce: '9007199254740993' });
    assert.strictEqual(again.deny_reason, 'policy_violation:duplicate_nonce');
    c.close();
  },
  async forged() {
    const pre = { session_id: 's_' + '0'.repeat(32), call_number: 1, tool_name: 't', tool_params: {},
      estimated_cost_usd: 0, nonce: 7 };
    const [a] = await raw(JSON.stringify({ protocol_version: '1.0.0', pre_exec: pre }) + '\n');
    assert.strictEqual(a.error.code, 'NOT_REGISTERED');
    const c = await shackle.connect({ agentId: 'forged-agent' });
    const other = await shackle.connect({ agentId: 'other-agent' });
    pre.session_id = c.sessionId;
    const b = await other.sendLine(JSON.stringify({ protocol_version: '1.0.0', pre_exec: pre }) + '\n');
    assert.strictEqual(b.error.code, 'SESSION_NOT_FOUND');
    await expectError('UNKNOWN_MESSAGE_TYPE', c.request('launch_missiles', {}));
    assert.strictEqual((await c.sendLine('{oops\n')).error.code, 'INVALID_MESSAGE');
    assert.strictEqual((await c.preExec('t', {})).verdict, 'ALLOW');
    c.close();
    other.close();
  },
  async resume() {
    const c = await shackle.connect({ agentId: 'resume-agent' });
    assert.strictEqual((await c.preExec('t', { i: 1 }, { estimatedCostUsd: 0.1 })).verdict, 'ALLOW');
    c.close(); // the connection goes before the call's report
    const d = await shackle.connect({ agentId: 'resume-agent', sessionId: c.sessionId });
    assert.strictEqual(d.sessionId, c.sessionId);
    assert.strictEqual(d.callNumber, 1);
    await d.postExec(1, 0.3);
    assert.strictEqual((await d.preExec('t', { i: 2 })).verdict, 'ALLOW');
    const o = await shackle.connect({ agentId: 'another-agent' });
    await expectError('SESSION_NOT_FOUND', o.request('register', { agent_id: 'another-agent', session_id: c.sessionId }));
    o.close();
    const e = await shackle.connect({ agentId: 'resume-agent', sessionId: c.sessionId });
    await expectError('SESSION_NOT_FOUND', d.state());
    assert.strictEqual((await e.state()).status, 'ACTIVE');
    d.close();
    e.close();
  },

  async stale() {
    const c = await shackle.connect({ agentId: 'stale-agent' });
    assert.strictEqual((await c.heartbeat()).status, 'ACTIVE');
    assert.strictEqual((await c.preExec('t', { i: 1 })).verdict, 'ALLOW');
    await sleep(1000); // more than 3 intervals of 250 ms
    assert.strictEqual((await c.preExec('t', { i: 2 })).deny_reason, 'session_stale');
    assert.strictEqual((await c.heartbeat()).status, 'STALE');
    await c.request('register', { agent_id: 'stale-agent', session_id: c.sessionId });
    assert.strictEqual((await c.preExec('t', { i: 3 })).verdict, 'ALLOW');
    const kept = await shackle.connect({ agentId: 'beating-agent' });
    kept.startHeartbeats();
    await sleep(1000);
    assert.strictEqual((await kept.preExec('t', { i: 4 })).verdict, 'ALLOW');
    kept.close();
    c.close();
  },
  async huge() {
    const answers = await raw('{"protocol_version":"1.0.0","heartbeat":{"session_id":"' + 'a'.repeat(3 << 20) + '"}}\n');
    assert.deepStrictEqual(answers.map((a) => a.error.code), ['MESSAGE_TOO_LARGE']);
    const c = await shackle.connect({ agentId: 'huge-agent' });
    assert.strictEqual((await c.preExec('t', {})).verdict, 'ALLOW');
    c.close();
  },
};

cases[process.argv[3]]().then(() => console.log('ok', process.argv[3]),
  (e) => { console.error('FAIL', process.argv[3], e); process.exit(1); });
