-- delete: drop a reserved job once it has finished or failed (the acknowledgement).
-- KEYS[1]  reserved zset         queues:{NAME}:reserved
-- ARGV[1]  the reserved payload, exactly as pop returned it
-- Returns 1 if it was reserved, 0 otherwise.
return redis.call('ZREM', KEYS[1], ARGV[1])
