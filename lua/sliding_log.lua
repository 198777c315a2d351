-- Sliding log, atomically: admit while fewer than `limit` admits lie in
-- (now - window, now]. One sorted set per key, scored by admit time (µs).
-- KEYS[1]  the key's sorted set
-- ARGV[1]  limit
-- ARGV[2]  window (µs)
-- ARGV[3]  now (µs, the replica's clock), or "" to use Redis' TIME
-- ARGV[4]  a member unique to this request
-- Returns {allowed (1/0), remaining, reset_us, retry_after_us}.
-- Starts after lua/prelude.lua (prepended by reference-api/build.rs),
-- which reads ARGV[3] into `now`.
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[4])
  redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000) + 1)
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {1, limit - count - 1, tonumber(oldest[2]) + window - now, 0}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local retry = tonumber(oldest[2]) + window - now
return {0, 0, retry, retry}
