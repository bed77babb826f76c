-- promote_delayed: make one delayed job ready now ("run now"), or drop it.
-- KEYS[1]  delayed zset          queues:{NAME}:delayed
-- KEYS[2]  ready list            queues:{NAME}
-- KEYS[3]  notify list           queues:{NAME}:notify
-- ARGV[1]  the payload, exactly as stored
-- ARGV[2]  'promote' to push it to the ready list's tail, 'head' to push it to its head
--          (the dashboard's "run now": it runs next), 'forget' to drop it
-- Returns 1 if it was still delayed, 0 otherwise.
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
if ARGV[2] == 'promote' then
  redis.call('RPUSH', KEYS[2], ARGV[1])
  redis.call('RPUSH', KEYS[3], '1')
elseif ARGV[2] == 'head' then
  redis.call('LPUSH', KEYS[2], ARGV[1])
  redis.call('RPUSH', KEYS[3], '1')
end
return 1
