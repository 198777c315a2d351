-- Fixed window, atomically: at most `limit` admits per epoch-aligned window.
-- KEYS[1]  the key's hash {window = the window's start, count = admits}
-- ARGV[1]  limit
-- ARGV[2]  window (µs)
-- ARGV[3]  now (µs, the replica's clock), or "" to use Redis' TIME
-- Returns {allowed (1/0), remaining, reset_us, retry_after_us}.
-- Starts after lua/prelude.lua (prepended by reference-api/build.rs),
-- which reads ARGV[3] into `now`; the window's arithmetic (`limit`,
-- `count`, `reset`, `take`) is lua/shared/fixed_window.lua, which the
-- lease script shares.
--#include shared/fixed_window.lua
if count < limit then
  take(1)
  return {1, limit - count - 1, reset, 0}
end
return {0, 0, reset, reset}
