-- unreserve: hand prefetched jobs that never started back to the head of the ready list,
-- as if they had not been delivered (a stopping or pausing worker's unused prefetch).
-- KEYS[1]  ready list            queues:{NAME}
-- KEYS[2]  reserved zset         queues:{NAME}:reserved
-- KEYS[3]  notify list           queues:{NAME}:notify
-- ARGV     pairs, in queue order: the reserved payload, the entry to put back (its
--          attempts count lowered again, its reservation stamps removed)
-- KEYS[4]  optional: ready uuid index  queues:{NAME}:index
-- Returns how many were handed back (a reservation that expired meanwhile is skipped:
-- the pop that reclaimed it already counted it).
local back = 0
for i = #ARGV - 1, 1, -2 do
  if redis.call('ZREM', KEYS[2], ARGV[i]) == 1 then
    redis.call('LPUSH', KEYS[1], ARGV[i + 1])
    local id = KEYS[4] and string.match(ARGV[i + 1], '^{[^{}%[%]]-"uuid":"([^"\\]+)"')
    if id then
      local first = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
      redis.call('ZADD', KEYS[4], (tonumber(first[2]) or 0) - 1, id)
    end
    redis.call('RPUSH', KEYS[3], '1')
    back = back + 1
  end
end
return back
