-- size: the pending, delayed and reserved counts of one queue, read together.
-- KEYS[1]  ready list            queues:{NAME}
-- KEYS[2]  delayed zset          queues:{NAME}:delayed
-- KEYS[3]  reserved zset         queues:{NAME}:reserved
-- KEYS[4]  optional: high-priority zset  queues:{NAME}:prio:hi  (counted as pending)
-- KEYS[5]  optional: low-priority zset   queues:{NAME}:prio:lo  (counted as pending)
-- Returns {pending, delayed, reserved}.
local pending = redis.call('LLEN', KEYS[1])
for i = 4, #KEYS do pending = pending + redis.call('ZCARD', KEYS[i]) end
return {
  pending,
  redis.call('ZCARD', KEYS[2]),
  redis.call('ZCARD', KEYS[3]),
}
