-- renew: extend the lease of a job that is still running (its worker is alive).
-- KEYS[1]  reserved zset         queues:{NAME}:reserved
-- ARGV[1]  the reserved payload, exactly as pop returned it
-- ARGV[2]  the new lease expiry (unix time)
-- Returns 1 if the reservation was still held, 0 if it is gone (acknowledged, released,
-- or expired and handed out again: then the worker must not count on it any more).
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
  return 1
end
return 0
