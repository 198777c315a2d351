-- Fixed window, leased: a replica takes up to `want` admits of the current
-- epoch-aligned window at once and spends them itself (redis_batched).
-- KEYS[1]  the key's hash {window = the window's start, count = admits granted}
-- ARGV[1]  limit
-- ARGV[2]  window (µs)
-- ARGV[3]  now (µs, the replica's clock), or "" to use Redis' TIME
-- ARGV[4]  want: the lease size
-- Returns {granted, remaining, reset_us, retry_after_us}: granted is 0 when
-- the window's admits are all leased out.
-- Starts after lua/prelude.lua (prepended by reference-api/build.rs),
-- which reads ARGV[3] into `now`; the window's arithmetic (`limit`,
-- `count`, `reset`, `take`) is lua/shared/fixed_window.lua, which
-- lua/fixed_window.lua shares. Only the admits taken at once differ.
--#include shared/fixed_window.lua
local want = tonumber(ARGV[4])
local granted = math.min(want, limit - count)
if granted > 0 then
  take(granted)
  return {granted, limit - count - granted, reset, 0}
end
return {0, 0, reset, reset}
