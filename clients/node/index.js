// SPDX-License-Identifier: MIT
// SHACKLE SP/1.0 Model B client (docs/sdk.md): ask the supervisor before
// each tool call, over the unix socket that shackle-run names in
// SHACKLE_SOCKET. No dependencies.
//
// Fail closed: a refusal, an error answer or a lost socket rejects; a
// guarded tool never runs without an ALLOW.
'use strict';
const net = require('net');
const crypto = require('crypto');

const PROTOCOL = '1.0.0';

class ShackleError extends Error {
  constructor(code, message) {
    super(code + ': ' + message);
    this.code = code;
    this.detail = message;
  }
}

class Denied extends ShackleError {
  constructor(response) {
    super(response.deny_reason || 'denied', response.human_readable_reason || '');
    this.response = response;
  }
}

// 63 random bits, never 0, sent as a decimal string (uint64 in proto3 JSON).
function nonce() {
  return (crypto.randomBytes(8).readBigUInt64BE() >> 1n | 1n).toString();
}

class Client {
  constructor(sock) {
    this.sock = sock;
    this.buf = '';
    this.waiting = [];
    this.queue = Promise.resolve();
    this.callNumber = 0;
    this.closed = null;
    sock.setEncoding('utf8');
    sock.on('data', (d) => this._data(d));
    const fail = (e) => {
      this.closed = e || new ShackleError('DAEMON_UNAVAILABLE', 'the socket closed');
      for (const w of this.waiting.splice(0)) w.reject(this.closed);
    };
    sock.on('error', fail);
    sock.on('close', () => fail(null));
  }

  _data(d) {
    this.buf += d;
    let i;
    while ((i = this.buf.indexOf('\n')) >= 0) {
      const line = this.buf.slice(0, i);
      this.buf = this.buf.slice(i + 1);
      const w = this.waiting.shift();
      if (!w) continue;
      try { w.resolve(JSON.parse(line)); } catch (e) { w.reject(e); }
    }
  }

  // Raw text (one or more lines) out, one answer envelope back; in order.
  sendLine(text) {
    const run = () => new Promise((resolve, reject) => {
      if (this.closed) return reject(this.closed);
      this.waiting.push({ resolve, reject });
      this.sock.write(text);
    });
    const p = this.queue.then(run, run);
    this.queue = p.catch(() => {});
    return p;
  }

  async request(kind, payload) {
    const env = { protocol_version: PROTOCOL, message_id: crypto.randomUUID(),
      client_timestamp_ns: String(process.hrtime.bigint()), [kind]: payload };
    const answer = await this.sendLine(JSON.stringify(env) + '\n');
    if (answer.error) throw new ShackleError(answer.error.code, answer.error.message);
    if (answer.correlation_id !== env.message_id) {
      throw new ShackleError('DAEMON_UNAVAILABLE', 'an answer to another message');
    }
    return Object.values(answer).find((v) => v && typeof v === 'object');
  }

  async register(opts) {
    const reg = { agent_id: opts.agentId || 'node-agent', runtime: 'node' };
    if (opts.organizationId) reg.organization_id = opts.organizationId;
    if (opts.framework) reg.framework = opts.framework;
    if (opts.sessionId) reg.session_id = opts.sessionId; // resume one made on another connection
    const r = await this.request('register', reg);
    this.sessionId = r.session_id;
    this.callNumber = Number(r.last_call_number || 0);
    this.heartbeatIntervalMs = r.heartbeat_interval_ms;
    return r;
  }

  // The verdict as the daemon gave it; resolves on DENY too.
  preExec(tool, params, { estimatedCostUsd = 0, nonce: n } = {}) {
    this.callNumber += 1;
    return this.request('pre_exec', { session_id: this.sessionId,
      call_number: String(this.callNumber), tool_name: tool, tool_params: params,
      estimated_cost_usd: Number(estimatedCostUsd), nonce: n === undefined ? nonce() : n });
  }

  postExec(callNumber, actualCostUsd, { success = true, errorMessage } = {}) {
    const body = { session_id: this.sessionId, call_number: String(callNumber),
      actual_cost_usd: Number(actualCostUsd), success };
    if (errorMessage) body.error_message = String(errorMessage);
    return this.request('post_exec', body);
  }

  heartbeat(localBudgetRemaining) {
    const body = { session_id: this.sessionId, last_call_number: String(this.callNumber) };
    if (localBudgetRemaining !== undefined) body.local_budget_remaining = localBudgetRemaining;
    return this.request('heartbeat', body);
  }

  state() {
    return this.request('get_session_state', { session_id: this.sessionId });
  }

  // Heartbeat every heartbeatIntervalMs (§4.5) until close(); does not keep node alive.
  startHeartbeats() {
    this.hb = setInterval(() => this.heartbeat().catch(() => {}), this.heartbeatIntervalMs);
    this.hb.unref();
  }

  // The context manager's counterpart: pre_exec, body(call) only on ALLOW
  // (Denied otherwise), post_exec with call.actualCostUsd and the outcome.
  async withCall(tool, params, { estimatedCostUsd = 0 } = {}, body) {
    const answer = await this.preExec(tool, params, { estimatedCostUsd });
    if (answer.verdict !== 'ALLOW') throw new Denied(answer);
    const call = { response: answer, callNumber: answer.call_number, actualCostUsd: estimatedCostUsd };
    let failed = null;
    try {
      return await body(call);
    } catch (e) {
      failed = e;
      throw e;
    } finally {
      await this.postExec(call.callNumber, call.actualCostUsd,
        { success: failed === null, errorMessage: failed ? failed.message : undefined });
    }
  }

  // A guarded tool: fn(params) runs only after ALLOW; actualCost(result)
  // gives the actual cost (default: the estimate).
  guard(tool, fn, { cost = 0, actualCost } = {}) {
    return (params) => this.withCall(tool, params, { estimatedCostUsd: cost }, async (call) => {
      const result = await fn(params);
      if (actualCost) call.actualCostUsd = actualCost(result);
      return result;
    });
  }

  close() {
    if (this.hb) clearInterval(this.hb);
    this.sock.end();
  }
}

// A registered Client on $SHACKLE_SOCKET (or opts.path).
function connect(opts = {}) {
  const path = opts.path || process.env.SHACKLE_SOCKET;
  if (!path) return Promise.reject(new ShackleError('DAEMON_UNAVAILABLE', 'SHACKLE_SOCKET is not set'));
  return new Promise((resolve, reject) => {
    const sock = net.createConnection(path);
    sock.once('error', reject);
    sock.once('connect', () => {
      sock.removeListener('error', reject);
      const c = new Client(sock);
      c.register(opts).then(() => resolve(c), reject);
    });
  });
}

module.exports = { connect, Client, Denied, ShackleError, PROTOCOL };
