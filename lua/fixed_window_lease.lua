-- Fixed window, leased: a replica takes up to `want` admits of the current
-- epoch-aligned window at once and spends them itself (redis_batched).
-- KEYS[1]  the key's hash {window = index, count = admits granted}
-- ARGV[1]  limit
-- ARGV[2]  window (µs)
-- ARGV[3]  now (µs, the replica's clock), or "" to use Redis' TIME
-- ARGV[4]  want: the lease size
-- Returns {granted, remaining, reset_us, retry_after_us}: granted is 0 when
-- the window's admits are all leased out.
-- Starts after lua/prelude.lua (prepended by reference-api/build.rs),
-- which reads ARGV[3] into `now`.
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local want = tonumber(ARGV[4])

local start = now - (now % window)
local state = redis.call('HMGET', KEYS[1], 'window', 'count')
local stored = tonumber(state[1])
local count = 0
-- Never move a window backwards (see fixed_window.lua).
if stored ~= nil and stored >= start then
  start = stored
  count = tonumber(state[2]) or 0
end
local reset = math.max(start + window - now, 1)
local granted = math.min(want, limit - count)
if granted > 0 then
  redis.call('HSET', KEYS[1], 'window', start, 'count', count + granted)
  redis.call('PEXPIRE', KEYS[1], math.ceil((reset + window) / 1000) + 1)
  return {granted, limit - count - granted, reset, 0}
end
return {0, 0, reset, reset}
