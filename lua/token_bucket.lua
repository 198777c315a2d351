-- Token bucket, atomically: `capacity` tokens refilled continuously at
-- `count` per `per_us`; an admit takes one. A new key starts full.
-- KEYS[1]  the key's hash {tokens, at}
-- ARGV[1]  capacity
-- ARGV[2]  refill count
-- ARGV[3]  now (µs, the replica's clock), or "" to use Redis' TIME
-- ARGV[4]  refill period (µs)
-- Returns {allowed (1/0), remaining, reset_us, retry_after_us}.
-- Starts after lua/prelude.lua (prepended by reference-api/build.rs),
-- which reads ARGV[3] into `now`.
-- (Numbers go to redis.call as numbers, never through tostring(), which
-- keeps only 14 digits: too few for microseconds since the epoch.)
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2]) / tonumber(ARGV[4])

local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
  tokens, at = capacity, now
end
if now > at then
  tokens = math.min(capacity, tokens + (now - at) * rate)
  at = now
end
if tokens >= 1 then
  tokens = tokens - 1
  local until_full = math.ceil((capacity - tokens) / rate)
  redis.call('HSET', KEYS[1], 'tokens', tokens, 'at', at)
  redis.call('PEXPIRE', KEYS[1], math.ceil(until_full / 1000) + 1)
  return {1, math.floor(tokens), until_full, 0}
end
local retry = math.ceil((1 - tokens) / rate)
return {0, 0, retry, retry}
