#!/usr/bin/env python3
"""A limiter nobody on this project wrote: the PyPI library `limits`
(alisaifee/limits), version 5.8.0 (pinned in requirements.txt), with its
in-memory storage, behind the smallest HTTP server the standard library
has. tests/it/real_limiters.rs and scenarios/limits.toml judge it.

    python3 limits_server.py PORT STRATEGY LIMIT [KEY_HEADER]
    e.g.  python3 limits_server.py 18100 moving-window "10 per 1 second"

PYTHONPATH must reach the library (scripts/limiters/install.sh puts it in
scripts/limiters/pylib). Listens on 127.0.0.1:PORT only. GET /limited:
key = the X-Customer-Id header (or KEY_HEADER; a request without it is
keyed "", as many limiters key a missing header); 200 when `limits` admits the hit, 429 when
it does not; no rate-limit headers. Anything else: 404. Prints nothing;
SIGTERM ends it at once. One process, so the memory storage is one.

What each strategy enforces, read from limits 5.8.0's source
(limits/storage/memory.py, limits/strategies.py), N hits per W seconds,
clock = time.time(); rejected hits are never recorded unless said:

  moving-window  (MovingWindowRateLimiter -> MemoryStorage.acquire_entry):
      a list of the key's admit times, newest first; a hit at `now` is
      admitted iff the N-th newest admit is older than now - W (fewer than N
      admits in the last W seconds), and then recorded. A sliding log:
      rlbench `algorithm = "sliding_log"`, limit N, window W.
  fixed-window   (FixedWindowRateLimiter -> MemoryStorage.incr):
      one counter per key that every hit increments (rejected hits too);
      the first hit after the counter expired starts it and sets its expiry
      to that hit + W; a hit is admitted iff the count including it is at
      most N. A fixed window anchored at the key's first hit, not at the
      epoch: rlbench `algorithm = "fixed_window"` (external targets are
      judged with any alignment).
  sliding-window-counter  (SlidingWindowCounterRateLimiter ->
      MemoryStorage.acquire_sliding_window_entry): admit counters per
      epoch-aligned window (int(now / W)); a hit is admitted iff
      floor(previous * (time left in the current window) / W + current) + 1
      <= N, i.e. the weighted estimate is below N, and then counted. Two
      weighted fixed windows: rlbench `algorithm = "sliding_counter"`.

Each decision runs under one lock. The library's memory storage is not
atomic across threads for two of the three strategies (fixed-window's incr
reads the count back outside its lock, so two threads can both read N + 1
and refuse; sliding-window-counter checks and increments with no lock and
says so in a comment), and ThreadingHTTPServer runs a thread per
connection. The lock makes each hit one step, the way a single-threaded
(asyncio) server would call the library; the decisions are the library's.
"""

import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from limits import parse
from limits.storage import MemoryStorage
from limits.strategies import STRATEGIES


def main():
    if len(sys.argv) not in (4, 5) or sys.argv[2] not in STRATEGIES:
        sys.exit(
            f"usage: {sys.argv[0]} PORT {{{'|'.join(STRATEGIES)}}} LIMIT [KEY_HEADER]"
            ' (e.g. "10 per 1 second")'
        )
    port, strategy, limit = int(sys.argv[1]), sys.argv[2], parse(sys.argv[3])
    key_header = sys.argv[4] if len(sys.argv) == 5 else "X-Customer-Id"
    limiter = STRATEGIES[strategy](MemoryStorage())
    decide = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as rlbench sends
        disable_nagle_algorithm = True  # no 40 ms delayed-ACK stalls

        def do_GET(self):
            if self.path != "/limited":
                return self.answer(404, b"not found\n")
            key = self.headers.get(key_header, "")
            with decide:
                admitted = limiter.hit(limit, key)
            if admitted:
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
    # The storage's expiry timer is a non-daemon thread: leave at once.
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    signal.signal(signal.SIGINT, lambda *_: os._exit(0))
    # Handlers run on the main thread, which may sleep in select() while
    # another thread took the signal: wake it often.
    server.serve_forever(poll_interval=0.1)


if __name__ == "__main__":
    main()
