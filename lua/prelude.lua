-- Prelude: reference-api/build.rs prepends this file to every other script
-- in lua/ (they start after it and never repeat it), so it is the one place
-- that reads the clock. It defines:
-- now  the decision's time in µs since the epoch: ARGV[3] (the replica's
--      clock), or Redis' own clock (TIME) when ARGV[3] is "".
-- (`now` stays a number; never put it through tostring(), which keeps only
-- 14 digits: too few for microseconds since the epoch.)
local now
if ARGV[3] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[3])
end
