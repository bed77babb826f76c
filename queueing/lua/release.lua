-- release: hand a reserved job back for a later attempt (the attempts count carries over).
-- Nothing is added when the reservation is gone (it expired and was handed out again),
-- so a late release never duplicates a job.
-- KEYS[1]  delayed zset          queues:{NAME}:delayed
-- KEYS[2]  reserved zset         queues:{NAME}:reserved
-- ARGV[1]  the reserved payload, exactly as pop returned it
-- ARGV[2]  when it becomes available again (unix time)
-- Returns 1 if released, 0 if the reservation was not held.
if redis.call('ZREM', KEYS[2], ARGV[1]) == 1 then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
  return 1
end
return 0
