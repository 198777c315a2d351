#!/usr/bin/env python3
"""A held-out test target: a Redis token bucket in the style of Stripe's
(the Lua script from Stripe's 2017 post "Scaling your API with rate
limiters", as Spring Cloud Gateway's RedisRateLimiter runs it), written
here for the verifier's tests — not rlbench's reference API, and sharing
nothing with it. tests/it/chunked_bucket.rs and
scenarios/stripe-bucket.toml judge it.

    REDIS_URL=redis://:PASS@127.0.0.1:PORT \\
        python3 stripe_bucket_server.py PORT CAPACITY RATE_PER_SECOND

PYTHONPATH must reach redis-py (scripts/limiters/install.sh puts it in
scripts/limiters/pylib). The Redis URL comes from the environment, so its
password is not in the process list. Listens on 127.0.0.1:PORT only.
GET /limited: key = the X-Customer-Id header (missing: ""); 200 when the
bucket admits, 429 when it does not; no rate-limit headers. Anything else:
404. Prints nothing; SIGTERM ends it at once. Its keys carry the port
(`stripe:PORT:{key}:…`): servers on the same Redis keep buckets of their
own, as replicas that each keep their own bucket would.

What it enforces. Per key, two Redis keys: the tokens left and the second
they were last refilled at. Each decision is one script (atomic in Redis):

    now    = Redis TIME, whole seconds (the microseconds are dropped)
    tokens = min(CAPACITY, tokens + RATE * max(0, now - last))
    admit iff tokens >= 1, then tokens -= 1; last = max(last, now)
    both keys expire after 2 * CAPACITY / RATE seconds (by then a bucket
    is full again anyway)

So the refill comes RATE tokens at a time, at each whole second of Redis'
wall clock: a bucket that admitted CAPACITY at 0.990 s admits RATE more at
1.001 s, and one drained at 0.1 s refuses until 1.0 s. Judged as a
continuous bucket it looks broken (both traces are in crates/verify's
tests); rlbench judges it as `algorithm = "token_bucket", capacity =
CAPACITY, refill = "RATE/s", refill_every = "1s", refill_aligned =
"epoch"`. Every decision reads the one clock of Redis inside the script.

The app's clock instead (the common production pattern: Spring Cloud
Gateway passes `Instant.now().getEpochSecond()`): with
STRIPE_APP_CLOCK_OFFSET_US=N in the environment, `now` is this process's
wall clock plus N µs, in whole seconds, passed to the script, and `last`
never runs back (a reading behind it refills nothing and leaves it). With
STRIPE_SHARED=1 every server on the Redis shares the buckets
(`stripe:shared:{key}:…`): app servers whose clocks differ by the offsets.
scenarios/stripe-app-clocks.toml judges two of them 1 ms apart.
"""

import os
import signal
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import redis

# KEYS: tokens, last refill; ARGV: capacity, rate per second, and `now`
# in whole seconds when the app passes it (else Redis TIME). `last` never
# runs back: a reading behind it refills nothing and leaves it.
BUCKET = """
local now = tonumber(ARGV[3]) or tonumber(redis.call('TIME')[1])
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local ttl = math.max(1, math.floor(2 * capacity / rate))
local tokens = tonumber(redis.call('GET', KEYS[1]))
if tokens == nil then tokens = capacity end
local last = tonumber(redis.call('GET', KEYS[2]))
if last == nil then last = 0 end
tokens = math.min(capacity, tokens + rate * math.max(0, now - last))
local admitted = 0
if tokens >= 1 then
  tokens = tokens - 1
  admitted = 1
end
redis.call('SETEX', KEYS[1], ttl, tokens)
redis.call('SETEX', KEYS[2], ttl, math.max(last, now))
return admitted
"""


def main():
    if len(sys.argv) != 4 or "REDIS_URL" not in os.environ:
        sys.exit(
            f"usage: REDIS_URL=redis://… {sys.argv[0]} PORT CAPACITY RATE_PER_SECOND"
        )
    port, capacity, rate = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    if port <= 0 or capacity <= 0 or rate <= 0:
        sys.exit("PORT, CAPACITY and RATE_PER_SECOND must be positive")
    store = redis.Redis.from_url(os.environ["REDIS_URL"], socket_timeout=2)
    script = store.register_script(BUCKET)
    offset = os.environ.get("STRIPE_APP_CLOCK_OFFSET_US")

    def bucket(keys):
        if offset is None:
            return script(keys=keys, args=[capacity, rate])
        now = (time.time_ns() // 1000 + int(offset)) // 1_000_000
        return script(keys=keys, args=[capacity, rate, now])

    scope = "shared" if os.environ.get("STRIPE_SHARED") == "1" else str(port)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as rlbench sends
        disable_nagle_algorithm = True  # no 40 ms delayed-ACK stalls

        def do_GET(self):
            if self.path != "/limited":
                return self.answer(404, b"not found\n")
            key = self.headers.get("X-Customer-Id", "")
            base = f"stripe:{scope}:{{{key}}}"
            try:
                admitted = bucket([f"{base}:tokens", f"{base}:ts"])
            except redis.RedisError as e:
                return self.answer(503, f"redis: {e}\n".encode())
            if admitted == 1:
                self.answer(200, b"ok\n")
            else:
                self.answer(429, b"limited\n")

        def answer(self, status, body):
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_):
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 1024  # the default 5 drops bursts of connects

    server = Server(("127.0.0.1", port), Handler)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    signal.signal(signal.SIGINT, lambda *_: os._exit(0))
    server.serve_forever(poll_interval=0.1)


if __name__ == "__main__":
    main()
