-- Sliding counter (two weighted fixed windows), atomically: admit while
-- previous * (share of it still in the sliding window) + current + 1 <= limit.
-- KEYS[1]  the key's hash {window = start, previous, current}
-- ARGV[1]  limit
-- ARGV[2]  window (µs)
-- ARGV[3]  now (µs, the replica's clock), or "" to use Redis' TIME
-- Returns {allowed (1/0), remaining, reset_us, retry_after_us}.
-- Starts after lua/prelude.lua (prepended by reference-api/build.rs),
-- which reads ARGV[3] into `now`.
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])

local start = now - (now % window)
local state = redis.call('HMGET', KEYS[1], 'window', 'previous', 'current')
local last = tonumber(state[1])
local previous, current = 0, 0
-- Never move backwards: a request stamped before the stored window (it
-- reached Redis late) is judged at that window's start, the strictest point.
if last ~= nil and last > start then
  start = last
  now = last
end
if last == start then
  previous, current = tonumber(state[2]) or 0, tonumber(state[3]) or 0
elseif last == start - window then
  previous = tonumber(state[3]) or 0
end
local elapsed = now - start
-- In units of 1/window, to stay exact.
local used = previous * (window - elapsed) + current * window
local window_end = start + window - now
if used + window <= limit * window then
  redis.call('HSET', KEYS[1], 'window', start, 'previous', previous, 'current', current + 1)
  redis.call('PEXPIRE', KEYS[1], math.ceil((window_end + window) / 1000) + 1)
  return {1, math.floor((limit * window - used - window) / window), window_end, 0}
end
local retry = window_end
if previous > 0 and current + 1 <= limit then
  retry = math.min(window_end, math.ceil((used + window - limit * window) / previous))
end
retry = math.max(retry, 1)
return {0, 0, retry, retry}
