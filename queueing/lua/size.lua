-- size: the pending, delayed and reserved counts of one queue, read together.
-- KEYS[1]  ready list            queues:{NAME}
-- KEYS[2]  delayed zset          queues:{NAME}:delayed
-- KEYS[3]  reserved zset         queues:{NAME}:reserved
-- Returns {pending, delayed, reserved}.
return {
  redis.call('LLEN', KEYS[1]),
  redis.call('ZCARD', KEYS[2]),
  redis.call('ZCARD', KEYS[3]),
}
