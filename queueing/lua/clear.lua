-- clear: drop every job waiting in a queue (ready and delayed). Reserved jobs are being
-- worked on and are left alone.
-- KEYS[1]  ready list            queues:{NAME}
-- KEYS[2]  delayed zset          queues:{NAME}:delayed
-- KEYS[3]  notify list           queues:{NAME}:notify
-- Returns how many jobs were dropped.
local dropped = redis.call('LLEN', KEYS[1]) + redis.call('ZCARD', KEYS[2])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
return dropped
