-- Fixed window, atomically: at most `limit` admits per epoch-aligned window.
-- KEYS[1]  the key's hash {window = index, count = admits}
-- ARGV[1]  limit
-- ARGV[2]  window (µs)
-- ARGV[3]  now (µs, the replica's clock), or "" to use Redis' TIME
-- Returns {allowed (1/0), remaining, reset_us, retry_after_us}.
-- Starts after lua/prelude.lua (prepended by reference-api/build.rs),
-- which reads ARGV[3] into `now`.
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])

local start = now - (now % window)
local state = redis.call('HMGET', KEYS[1], 'window', 'count')
local stored = tonumber(state[1])
local count = 0
-- Never move a window backwards: a request stamped just before a boundary
-- can reach Redis after one stamped just after it (another replica, or
-- another thread); it counts in the newer window instead of resetting it.
if stored ~= nil and stored >= start then
  start = stored
  count = tonumber(state[2]) or 0
end
local reset = math.max(start + window - now, 1)
if count < limit then
  redis.call('HSET', KEYS[1], 'window', start, 'count', count + 1)
  -- Keep the count a window longer than it is current: a request stamped
  -- in this window can reach Redis late, and must not find it gone.
  redis.call('PEXPIRE', KEYS[1], math.ceil((reset + window) / 1000) + 1)
  return {1, limit - count - 1, reset, 0}
end
return {0, 0, reset, reset}
