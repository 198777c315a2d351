#!/usr/bin/env node
// A limiter nobody on this project wrote: the npm middleware
// express-rate-limit (express-rate-limit/express-rate-limit), version
// 7.5.1 (pinned in package-lock.json, with express, its peer), its default
// MemoryStore, in an express app. tests/it/probe.rs probes it.
//
//     node erl_server.js PORT LIMIT WINDOW_SECONDS
//     e.g.  node erl_server.js 18120 10 1
//
// require() finds the packages in scripts/limiters/node_modules
// (scripts/limiters/install.sh runs `npm ci` there). Listens on
// 127.0.0.1:PORT only. GET /limited: key = the X-Customer-Id header; 200
// when admitted, 429 when limited (the middleware's default), with the
// draft-7 RateLimit headers. Anything else: express's 404. SIGTERM ends it.
//
// What it enforces, read from 7.5.1's source (dist/index.cjs, class
// MemoryStore and the middleware): one record per key; every hit adds 1,
// limited ones too; the first hit after the record's resetTime (or ever)
// resets it to 0 with resetTime = now + WINDOW (Date.now(), ms); a hit is
// admitted iff the count including it is at most LIMIT. So: LIMIT per
// WINDOW in a fixed window anchored at the key's first hit — rlbench
// `algorithm = "fixed_window"`. The store's increment is synchronous
// inside an async function, on Node's one thread: atomic.

'use strict';

const express = require('express');
const { rateLimit } = require('express-rate-limit');

const [port, limit, windowS] = process.argv.slice(2).map(Number);
if (!(port > 0) || !(limit > 0) || !(windowS > 0)) {
  console.error('usage: erl_server.js PORT LIMIT WINDOW_SECONDS');
  process.exit(2);
}

const app = express();
app.get(
  '/limited',
  rateLimit({
    windowMs: windowS * 1000,
    limit,
    standardHeaders: 'draft-7',
    legacyHeaders: false,
    keyGenerator: (req) => req.get('X-Customer-Id') || '',
    // The key is not the client address: nothing for its checks to say.
    validate: false,
  }),
  (req, res) => res.type('text/plain').send('ok\n'),
);
app.listen(port, '127.0.0.1');

process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
