-- range_previews: a page of a queue's entries, each cut to a bounded prefix.
-- A list page needs a few fields of each entry, not entries of many megabytes: reading
-- them whole made every page view copy them into the web process.
-- "pending" reads like pending.lua (the high-priority set, the ready list, the
-- low-priority set, as pop takes them); "zset" reads one delayed or reserved zset.
-- KEYS  pending: prio:hi zset, ready list, prio:lo zset     zset: the zset
-- ARGV[1] "pending" or "zset"   ARGV[2] start   ARGV[3] stop   ARGV[4] bytes kept per entry
-- Returns, per entry: prefix, full length (and the score, for a zset).
local limit = tonumber(ARGV[4])
local out = {}
local function keep(item)
  out[#out + 1] = string.sub(item, 1, limit)
  out[#out + 1] = #item
end
if ARGV[1] == 'zset' then
  local items = redis.call('ZRANGE', KEYS[1], ARGV[2], ARGV[3], 'WITHSCORES')
  for i = 1, #items, 2 do
    keep(items[i])
    out[#out + 1] = items[i + 1]
  end
  return out
end
local sizes = {redis.call('ZCARD', KEYS[1]), redis.call('LLEN', KEYS[2]),
               redis.call('ZCARD', KEYS[3])}
local total = sizes[1] + sizes[2] + sizes[3]
local start, stop = tonumber(ARGV[2]), tonumber(ARGV[3])
if start < 0 then start = math.max(total + start, 0) end
if stop < 0 then stop = total + stop end
for i = 1, 3 do
  local size = sizes[i]
  if stop >= 0 and start < size and size > 0 then
    local first, last = math.max(start, 0), math.min(stop, size - 1)
    local items
    if i == 2 then items = redis.call('LRANGE', KEYS[2], first, last)
    else items = redis.call('ZRANGE', KEYS[i], first, last) end
    for _, item in ipairs(items) do keep(item) end
  end
  start, stop = start - size, stop - size
end
return out
