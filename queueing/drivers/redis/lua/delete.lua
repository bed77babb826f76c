-- delete: drop reserved jobs once they have finished or failed (the acknowledgement).
-- KEYS[1]  reserved zset         queues:{NAME}:reserved
-- ARGV     the reserved payloads, exactly as pop returned them
-- Returns how many were still reserved.
return redis.call('ZREM', KEYS[1], unpack(ARGV))
