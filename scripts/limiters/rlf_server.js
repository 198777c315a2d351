#!/usr/bin/env node
// A limiter nobody on this project wrote: the npm library
// rate-limiter-flexible (animir/node-rate-limiter-flexible), version 11.4.0
// (pinned in package-lock.json), its RateLimiterMemory, behind Node's own
// http server. tests/it/real_limiters.rs and scenarios/rate-limiter-flexible.toml
// judge it.
//
//     node rlf_server.js PORT POINTS DURATION_SECONDS
//     e.g.  node rlf_server.js 18110 10 1
//
// require() finds the library in scripts/limiters/node_modules
// (scripts/limiters/install.sh runs `npm ci` there). Listens on
// 127.0.0.1:PORT only. GET /limited: key = the X-Customer-Id header; 200
// when consume() resolves, 429 when it rejects; no rate-limit headers.
// Anything else: 404. Prints nothing; SIGTERM ends it at once.
//
// What it enforces, read from 11.4.0's source (lib/RateLimiterMemory.js,
// lib/component/MemoryStorage/MemoryStorage.js), with the defaults
// blockDuration = 0 and execEvenly = false, clock = Date.now() (ms):
// one record per key; consume() adds 1 to it on every hit, rejected hits
// too, while now < its expiresAt; the first hit after that (or ever) starts
// a new record at 1 with expiresAt = now + DURATION s. A hit is admitted iff
// the record's value including it is at most POINTS. So: POINTS per
// DURATION in a fixed window anchored at the key's first hit, not at the
// epoch — rlbench `algorithm = "fixed_window"`, limit POINTS, window
// DURATION (external targets are judged with any alignment). The decision
// is synchronous inside consume(), on Node's one thread: atomic.

'use strict';

const http = require('node:http');
const { RateLimiterMemory } = require('rate-limiter-flexible');

const [port, points, duration] = process.argv.slice(2).map(Number);
if (!(port > 0) || !(points > 0) || !(duration > 0)) {
  console.error('usage: rlf_server.js PORT POINTS DURATION_SECONDS');
  process.exit(2);
}
const limiter = new RateLimiterMemory({ points, duration });

function answer(res, status, body) {
  res.writeHead(status, {
    'Content-Type': 'text/plain',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

const server = http.createServer((req, res) => {
  if (req.method !== 'GET' || req.url !== '/limited') {
    answer(res, 404, 'not found\n');
    return;
  }
  const key = req.headers['x-customer-id'] || '';
  limiter.consume(key).then(
    () => answer(res, 200, 'ok\n'),
    (why) => {
      // A RateLimiterRes means "limited"; an Error would be a bug.
      if (why instanceof Error) answer(res, 500, `${why}\n`);
      else answer(res, 429, 'limited\n');
    },
  );
});
server.listen(port, '127.0.0.1');

process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
