-- clear: drop every job waiting in a queue (ready, priority sets and delayed). Reserved
-- jobs are being worked on and are left alone.
-- KEYS[1]  ready list            queues:{NAME}
-- KEYS[2]  delayed zset          queues:{NAME}:delayed
-- KEYS[3]  notify list           queues:{NAME}:notify
-- KEYS[4]  optional: high-priority zset  queues:{NAME}:prio:hi
-- KEYS[5]  optional: low-priority zset   queues:{NAME}:prio:lo
-- KEYS[6..] optional: the uuid indexes and sequence (deleted, not counted)
-- Returns how many jobs were dropped.
local dropped = redis.call('LLEN', KEYS[1]) + redis.call('ZCARD', KEYS[2])
for i = 4, math.min(#KEYS, 5) do dropped = dropped + redis.call('ZCARD', KEYS[i]) end
redis.call('DEL', unpack(KEYS))
return dropped
