-- forget_pending: remove one waiting job (and one notify token, to keep them in step).
-- KEYS[1]  ready list            queues:{NAME}
-- KEYS[2]  notify list           queues:{NAME}:notify
-- KEYS[3]  optional: high-priority zset  queues:{NAME}:prio:hi
-- KEYS[4]  optional: low-priority zset   queues:{NAME}:prio:lo
-- KEYS[5]  optional: uuid index   queues:{NAME}:index
-- ARGV[1]  the payload, exactly as stored
-- Returns 1 if removed, 0 if it was no longer pending.
local removed = redis.call('LREM', KEYS[1], 1, ARGV[1])
for i = 3, math.min(#KEYS, 4) do
  if removed > 0 then break end
  removed = redis.call('ZREM', KEYS[i], ARGV[1])
end
if removed > 0 then redis.call('LPOP', KEYS[2]) end
if removed > 0 and KEYS[5] then
  local function uuid_of(entry)  -- the top-level "uuid" (before any nested object), or nil
    return string.match(entry, '^{[^{}%[%]]-"uuid":"([^"\\]+)"')
  end
  local id = uuid_of(ARGV[1])
  if id then redis.call('ZREM', KEYS[5], id) end
end
return removed
