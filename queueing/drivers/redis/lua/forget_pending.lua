-- forget_pending: remove one waiting job (and one notify token, to keep them in step).
-- KEYS[1]  ready list            queues:{NAME}
-- KEYS[2]  notify list           queues:{NAME}:notify
-- KEYS[3]  optional: high-priority zset  queues:{NAME}:prio:hi
-- KEYS[4]  optional: low-priority zset   queues:{NAME}:prio:lo
-- ARGV[1]  the payload, exactly as stored
-- Returns 1 if removed, 0 if it was no longer pending.
local removed = redis.call('LREM', KEYS[1], 1, ARGV[1])
for i = 3, #KEYS do
  if removed > 0 then break end
  removed = redis.call('ZREM', KEYS[i], ARGV[1])
end
if removed > 0 then redis.call('LPOP', KEYS[2]) end
return removed
