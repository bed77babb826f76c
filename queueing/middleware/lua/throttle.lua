-- throttle: exception counter of ThrottlesExceptions, in one fixed decay window.
-- KEYS[1]  the counter              queueing:throttle:{KEY}
-- ARGV[1]  'check' or 'hit'
-- ARGV[2]  max exceptions
-- ARGV[3]  decay in milliseconds
-- check: returns the milliseconds the key stays closed (0: jobs may run).
-- hit:   counts one exception; the window starts at the first one and, once the count
--        reaches max, restarts so jobs stay closed for a whole decay. Returns the count.
local max = tonumber(ARGV[2])
if ARGV[1] == 'check' then
  local count = tonumber(redis.call('GET', KEYS[1]) or '0')
  if count < max then return 0 end
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl < 1 then return 0 end
  return ttl
end
local count = redis.call('INCR', KEYS[1])
if count == 1 or count == max then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
elseif redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return count
