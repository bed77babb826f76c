-- pending: waiting jobs in the order pop takes them, by index range (inclusive, like
-- LRANGE; negative indexes count from the end): the high-priority set, then the ready
-- list, then the low-priority set. Without Django Tasks priorities both sets are absent
-- and this is LRANGE of the ready list.
-- KEYS[1]  high-priority zset    queues:{NAME}:prio:hi
-- KEYS[2]  ready list            queues:{NAME}
-- KEYS[3]  low-priority zset     queues:{NAME}:prio:lo
-- ARGV[1]  start index
-- ARGV[2]  stop index
-- Returns the entries.
local sizes = {redis.call('ZCARD', KEYS[1]), redis.call('LLEN', KEYS[2]),
               redis.call('ZCARD', KEYS[3])}
local total = sizes[1] + sizes[2] + sizes[3]
local start, stop = tonumber(ARGV[1]), tonumber(ARGV[2])
if start < 0 then start = math.max(total + start, 0) end
if stop < 0 then stop = total + stop end
local out = {}
for i = 1, 3 do
  local size = sizes[i]
  if stop >= 0 and start < size and size > 0 then
    local first, last = math.max(start, 0), math.min(stop, size - 1)
    local items
    if i == 2 then items = redis.call('LRANGE', KEYS[2], first, last)
    else items = redis.call('ZRANGE', KEYS[i], first, last) end
    for _, item in ipairs(items) do out[#out + 1] = item end
  end
  start, stop = start - size, stop - size
end
return out
