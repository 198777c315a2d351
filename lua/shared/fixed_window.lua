-- The fixed window's arithmetic, shared: reference-api/build.rs puts this
-- file where lua/fixed_window.lua (one admit per call) and
-- lua/fixed_window_lease.lua (a lease of several) say
-- `--#include shared/fixed_window.lua`, after the prelude has read `now`.
-- Each script is still one self-contained text in Redis (its own SHA, its
-- own EVALSHA), and both name the same key in KEYS[1].
-- KEYS[1]  the key's hash {window = the window's start (µs), count = admits}
-- ARGV[1]  limit
-- ARGV[2]  window (µs)
-- It defines:
-- limit, window  ARGV[1] and ARGV[2] as numbers
-- start   the current window's start (µs, epoch-aligned)
-- count   the admits already counted (or leased out) in it
-- reset   µs until it ends, at least 1
-- take(n) counts n more admits in it
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

local function take(n)
  redis.call('HSET', KEYS[1], 'window', start, 'count', count + n)
  -- Keep the count a window longer than it is current: a request stamped
  -- in this window can reach Redis late, and must not find it gone.
  redis.call('PEXPIRE', KEYS[1], math.ceil((reset + window) / 1000) + 1)
end
