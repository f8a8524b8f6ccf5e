// SPDX-License-Identifier: MIT
// A node.js agent (libuv: thread pool, epoll, non-blocking connects): many
// concurrent HTTP requests to an allowed and a forbidden loopback address,
// and a spawn of a denied binary. Prints one JSON line with what it saw.
// usage: node node_agent.js ALLOWED_URL FORBIDDEN_URL N DENIED_BIN MARK
'use strict';
const http = require('http');
const { execFile } = require('child_process');
const [allowedUrl, forbiddenUrl, nStr, deniedBin, mark] = process.argv.slice(2);
const n = parseInt(nStr, 10);
const out = { allowed: {}, forbidden: {}, spawn: null };

function get(url, bucket) {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false, timeout: 10000 }, (res) => {
      res.resume();
      res.on('end', () => { bucket['http:' + res.statusCode] = (bucket['http:' + res.statusCode] || 0) + 1; resolve(); });
    });
    req.on('error', (e) => { bucket[e.code || 'error'] = (bucket[e.code || 'error'] || 0) + 1; resolve(); });
    req.on('timeout', () => { req.destroy(new Error('timeout')); });
  });
}

(async () => {
  const jobs = [];
  for (let i = 0; i < n; i++) {
    jobs.push(get(allowedUrl + '?i=' + i, out.allowed));
    if (i % 4 === 0) jobs.push(get(forbiddenUrl + '?i=' + i, out.forbidden));
  }
  await Promise.all(jobs);
  await new Promise((resolve) => {
    // node throws some spawn errors (EPERM) synchronously, reports others
    // (ENOENT) through the callback
    try {
      execFile(deniedBin, [mark], (err) => { out.spawn = err ? (err.code || String(err)) : 'ran'; resolve(); });
    } catch (e) {
      out.spawn = e.code || String(e);
      resolve();
    }
  });
  console.log(JSON.stringify(out));
})();
