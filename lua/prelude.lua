-- Prelude: reference-api/build.rs prepends this file to every other script
-- in lua/ (they start after it and never repeat it), so it is the one place
-- that reads the clock. It defines:
-- now  the decision's time in µs since the epoch: ARGV[3] (the replica's
--      clock), or Redis' own clock (TIME) when ARGV[3] is "".
-- (`now` stays a number; never put it through tostring(), which keeps only
-- 14 digits: too few for microseconds since the epoch.)
-- It also ends the script at once, consuming nothing, when ARGV[5] holds a
-- deadline (µs since the epoch) that Redis' clock has passed: the replica
-- that sent it has answered without Redis by then, so the decision would
-- take capacity for a request nobody is served. It returns {-1, 0, 0, 0}.
local now
local deadline = ARGV[5]
if ARGV[3] == '' or (deadline and deadline ~= '') then
  local t = redis.call('TIME')
  local clock = tonumber(t[1]) * 1000000 + tonumber(t[2])
  if deadline and deadline ~= '' and clock > tonumber(deadline) then
    return {-1, 0, 0, 0}
  end
  now = clock
end
if ARGV[3] ~= '' then
  now = tonumber(ARGV[3])
end
