-- promote_delayed: make one delayed job ready now ("run now"), or drop it.
-- KEYS[1]  delayed zset          queues:{NAME}:delayed
-- KEYS[2]  ready list            queues:{NAME}
-- KEYS[3]  notify list           queues:{NAME}:notify
-- ARGV[1]  the payload, exactly as stored
-- ARGV[2]  'promote' to push it to the ready list's tail, 'head' to push it to its head
--          (the dashboard's "run now": it runs next), 'forget' to drop it
-- KEYS[4]  optional: ready uuid index    queues:{NAME}:index
-- KEYS[5]  optional: delayed uuid index  queues:{NAME}:due-index
-- KEYS[6]  optional: sequence            queues:{NAME}:seq
-- Returns 1 if it was still delayed, 0 otherwise.
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
local function uuid_of(entry)  -- the top-level "uuid" (before any nested object), or nil
  return string.match(entry, '^{[^{}%[%]]-"uuid":"([^"\\]+)"')
end
local id = KEYS[6] and uuid_of(ARGV[1])
if id then
  redis.call('ZREM', KEYS[5], id)
  if ARGV[2] == 'promote' then
    redis.call('ZADD', KEYS[4], redis.call('INCR', KEYS[6]), id)
  elseif ARGV[2] == 'head' then
    local first = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
    redis.call('ZADD', KEYS[4], (tonumber(first[2]) or 0) - 1, id)
  end
end
if ARGV[2] == 'promote' then
  redis.call('RPUSH', KEYS[2], ARGV[1])
  redis.call('RPUSH', KEYS[3], '1')
elseif ARGV[2] == 'head' then
  redis.call('LPUSH', KEYS[2], ARGV[1])
  redis.call('RPUSH', KEYS[3], '1')
end
return 1
