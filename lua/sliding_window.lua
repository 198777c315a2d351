-- Segmented sliding window (ASP.NET Core's SlidingWindowRateLimiter),
-- atomically: the window is split into `segments` epoch-aligned segments;
-- admit while the current segment and the segments-1 before it hold fewer
-- than `limit` admits.
-- KEYS[1]  the key's hash {segment index = admits}
-- ARGV[1]  limit
-- ARGV[2]  window (µs)
-- ARGV[3]  now (µs, the replica's clock), or "" to use Redis' TIME
-- ARGV[4]  segments
-- Returns {allowed (1/0), remaining, reset_us, retry_after_us}.
-- Starts after lua/prelude.lua (prepended by reference-api/build.rs),
-- which reads ARGV[3] into `now`.
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local segments = tonumber(ARGV[4])
local seg = window / segments
local current = (now - (now % seg)) / seg

-- Never move backwards: a request stamped before the newest stored segment
-- (it reached Redis late) counts in that segment.
local fields = redis.call('HGETALL', KEYS[1])
for i = 1, #fields, 2 do
  local index = tonumber(fields[i])
  if index > current then
    current = index
  end
end

-- Sum the live segments (oldest first); drop the ones that slid out.
local live = {}
local total = 0
for i = 1, #fields, 2 do
  local index = tonumber(fields[i])
  local count = tonumber(fields[i + 1])
  if index <= current - segments then
    redis.call('HDEL', KEYS[1], fields[i])
  else
    live[#live + 1] = {index, count}
    total = total + count
  end
end
table.sort(live, function(a, b) return a[1] < b[1] end)

-- When enough admits will have left for one more to fit.
local need = math.max(1, total + 1 - limit)
local freed = 0
local back_at = (current + segments) * seg
for _, s in ipairs(live) do
  freed = freed + s[2]
  if freed >= need then
    back_at = (s[1] + segments) * seg
    break
  end
end

if total < limit then
  redis.call('HINCRBY', KEYS[1], current, 1)
  -- A window longer than needed: late requests must still find the counts.
  redis.call('PEXPIRE', KEYS[1], math.ceil(2 * window / 1000) + 1)
  return {1, limit - total - 1, back_at - now, 0}
end
return {0, 0, back_at - now, back_at - now}
