-- locate: where a job is, by uuid, through the uuid indexes push/later/pop/release keep
-- (see push.lua): the dashboard's search and bookmarked job links, at any queue length.
-- KEYS[1]  ready list            queues:{NAME}
-- KEYS[2]  delayed zset          queues:{NAME}:delayed
-- KEYS[3]  reserved zset         queues:{NAME}:reserved
-- KEYS[4]  uuid index            queues:{NAME}:index      (uuid -> sequence)
-- KEYS[5]  delayed uuid index    queues:{NAME}:due-index  (uuid -> due time)
-- KEYS[6]  high-priority zset    queues:{NAME}:prio:hi    (counted before the list)
-- ARGV[1]  the uuid
-- ARGV[2]  how many entries to read at most where the index is behind (entries pushed
--          without one, before an upgrade or by hand)
-- Returns {state, entry, place}: place is the index among pending jobs (pending) or
-- the score (delayed, reserved); or false when the indexes do not know the uuid.
-- O(log N) plus one LINDEX (which walks list nodes, not entries) when the index is exact.
local needle = '"uuid":"' .. ARGV[1] .. '"'
local window = tonumber(ARGV[2]) or 1000
local rank = redis.call('ZRANK', KEYS[4], ARGV[1])
if rank then
  local ahead = redis.call('ZCARD', KEYS[6])
  local entry = redis.call('LINDEX', KEYS[1], rank)
  if entry and string.find(entry, needle, 1, true) then
    return {'pending', entry, tostring(rank + ahead)}
  end
  -- Unindexed entries ahead of it push it further back than its rank: read on from there.
  local items = redis.call('LRANGE', KEYS[1], rank, rank + window - 1)
  for i, item in ipairs(items) do
    if string.find(item, needle, 1, true) then
      return {'pending', item, tostring(rank + i - 1 + ahead)}
    end
  end
end
local due = redis.call('ZSCORE', KEYS[5], ARGV[1])
if due then
  for _, item in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], due, due)) do
    if string.find(item, needle, 1, true) then return {'delayed', item, due} end
  end
end
-- Reserved jobs are few (processes x prefetch): read them, bounded.
local held = redis.call('ZRANGE', KEYS[3], 0, window - 1, 'WITHSCORES')
for i = 1, #held, 2 do
  if string.find(held[i], needle, 1, true) then return {'reserved', held[i], held[i + 1]} end
end
return false
