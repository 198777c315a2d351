-- GCRA (virtual scheduling), atomically: the theoretical arrival time (TAT)
-- advances one emission interval per admit; a request is admitted unless it
-- comes more than (burst - 1) intervals ahead of the TAT.
-- KEYS[1]  the key's TAT (µs)
-- ARGV[1]  burst (admits at once)
-- ARGV[2]  rate count
-- ARGV[3]  now (µs, the replica's clock), or "" to use Redis' TIME
-- ARGV[4]  rate period (µs)
-- Returns {allowed (1/0), remaining, reset_us, retry_after_us}.
-- Starts after lua/prelude.lua (prepended by reference-api/build.rs),
-- which reads ARGV[3] into `now`.
-- (Numbers go to redis.call as numbers, never through tostring(), which
-- keeps only 14 digits: too few for microseconds since the epoch.)
local burst = tonumber(ARGV[1])
local interval = tonumber(ARGV[4]) / tonumber(ARGV[2])

local tolerance = (burst - 1) * interval
local tat = tonumber(redis.call('GET', KEYS[1])) or now
tat = math.max(tat, now)
local allow_at = tat - tolerance
if now < allow_at then
  local retry = math.ceil(allow_at - now)
  return {0, 0, retry, retry}
end
tat = tat + interval
redis.call('SET', KEYS[1], tat, 'PX', math.ceil((tat - now) / 1000) + 1)
local room = (now + tolerance - tat) / interval
local remaining = 0
if room >= 0 then
  remaining = math.floor(room) + 1
end
return {1, remaining, math.ceil(tat - now), 0}
