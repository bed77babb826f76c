-- unreserve: hand reserved jobs that never started back to their queue, as if they had
-- not been delivered (a stopping or pausing worker's unused prefetch; the sidecar
-- settling a dead worker's table). Each goes back to the head of its place: the ready
-- list, or its Django Tasks priority set at the front of its priority (a low-priority
-- job never jumps ahead of plain ones).
-- The entry put back is the reserved member undone by string surgery, the inverse of
-- pop's: the delivery count lowered by one and the reservation stamps removed; every
-- other field (pendingFailure, settled, runs...) is kept byte for byte, and nothing is
-- decoded, so an entry the worker could not read goes back as it came. A member pop
-- wrapped on its first delivery gets its original bytes back.
-- KEYS[1]  ready list            queues:{NAME}
-- KEYS[2]  reserved zset         queues:{NAME}:reserved
-- KEYS[3]  notify list           queues:{NAME}:notify
-- KEYS[4]  high-priority zset    queues:{NAME}:prio:hi
-- KEYS[5]  low-priority zset     queues:{NAME}:prio:lo
-- KEYS[6]  optional: ready uuid index  queues:{NAME}:index (a job put back at the head
--          of the ready list gets a score below the first, as LPUSH places it)
-- ARGV     the reserved members, in queue order
-- Returns how many were handed back (a reservation that expired meanwhile is skipped:
-- the pop that reclaimed it already put it back).
local function priority_of(entry)
  local _, at = string.find(entry, '^{"attempts":%d+,')
  if not at then return nil end
  local value = string.match(entry, '^"priority":(%-?%d+)[,}]', at + 1)
  if not value then return nil end
  value = tonumber(value)
  if value == 0 or value > 100 or value < -100 then return nil end
  return value
end

local function undone(member)
  local digits = string.match(member, '^{"attempts":(%d+),')
  if not digits or #digits > 9 then return nil end
  local rest = string.sub(member, 14 + #digits)
  local _, stop = string.find(rest, '^"reservation":"[^"\\]*",')
  if not stop then return nil end  -- not a member pop wrote
  rest = string.sub(rest, stop + 1)
  _, stop = string.find(rest, '^"reservedBy":"[^"\\]*",')
  if stop then rest = string.sub(rest, stop + 1) end
  local count = tonumber(digits) - 1
  if count == 0 and string.sub(rest, 1, 10) == '"wrapped":' then
    local ok, original = pcall(cjson.decode, string.sub(rest, 11, -2))
    if ok and type(original) == 'string' then return original end
    return nil
  end
  if count < 0 then return nil end
  return '{"attempts":' .. count .. ',' .. rest
end

local back = 0
for i = #ARGV, 1, -1 do
  local entry = undone(ARGV[i])
  if entry and redis.call('ZREM', KEYS[2], ARGV[i]) == 1 then
    local priority = priority_of(entry)
    if priority then
      local key = KEYS[4]
      if priority < 0 then key = KEYS[5] end
      -- below every pushed job of its priority (their scores add a sequence >= 1)
      redis.call('ZADD', key, (100 - priority) * 17592186044416 - back, entry)
    else
      redis.call('LPUSH', KEYS[1], entry)
      local id = KEYS[6] and string.match(entry, '^{[^{}%[%]]-"uuid":"([^"\\]+)"')
      if id then
        local first = redis.call('ZRANGE', KEYS[6], 0, 0, 'WITHSCORES')
        redis.call('ZADD', KEYS[6], (tonumber(first[2]) or 0) - 1, id)
      end
    end
    redis.call('RPUSH', KEYS[3], '1')
    back = back + 1
  end
end
return back
