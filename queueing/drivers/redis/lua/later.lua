-- later: schedule jobs in a queue's delayed set (no notify token until they are due).
-- KEYS[1]  delayed zset          queues:{NAME}:delayed
-- KEYS[2]  optional: delayed uuid index  queues:{NAME}:due-index (zset uuid -> due time)
-- ARGV     pairs: available-at unix time, encoded payload
-- Returns the number of jobs added.
local function uuid_of(entry)  -- the top-level "uuid" (before any nested object), or nil
  return string.match(entry, '^{[^{}%[%]]-"uuid":"([^"\\]+)"')
end
local added = 0
for i = 1, #ARGV, 2 do
  added = added + redis.call('ZADD', KEYS[1], ARGV[i], ARGV[i + 1])
  local id = KEYS[2] and uuid_of(ARGV[i + 1])
  if id then redis.call('ZADD', KEYS[2], ARGV[i], id) end
end
return added
