-- pop: reserve the next ready job(s) of one queue, atomically (up to ARGV[7] at once).
--   0. a paused queue (its :paused key exists) reserves nothing: returns -1, so a pause is
--      in force the moment queue_pause returns, with no second round trip;
--   1. move due delayed jobs, then expired reservations, to the tail of the ready list
--      (at most ARGV[3] of each, with one notify token per job moved);
--   2. LPOP the ready list and count this delivery: an entry that starts with
--      {"attempts":N, gets N+1 by string surgery; ANY other entry (not JSON, keys in
--      another order, negative or huge attempts, the empty string...) is wrapped as
--      {"attempts":1,...,"wrapped":"<the entry as a JSON string>"}, so every delivery of
--      every entry is counted and the worker can settle it (run it or fail it);
--   3. stamp a reservation token, unique per delivery, right after attempts (replacing
--      an earlier one): two identical entries become two distinct reserved members, so
--      acknowledging one never removes the other;
--   4. ZADD the new string to the reserved set, scored by the lease expiry; drop one
--      notify token per job.
-- Steps 2-4 repeat for up to ARGV[7] jobs (a worker's prefetch); job i's token is
-- ARGV[6] .. '.' .. i. Without prioritised jobs they are done for the whole batch at
-- once (LRANGE, LTRIM, one ZREM, one ZADD): a few calls a batch, not three a job.
-- Django Tasks priority (docs/tasks.md#priority): jobs with a non-zero priority wait in
-- two sorted sets, taken before (:prio:hi) and after (:prio:lo) the ready list. Step 0's
-- one EXISTS covers the paused flag and both sets, so a queue without prioritised jobs
-- makes the same calls as before; with some, step 2 takes the head of :prio:hi first,
-- then the ready list, then :prio:lo. Step 1 sends a due entry that carries "priority"
-- (right after attempts and any reservation stamps) back to its set instead of the
-- ready list.
-- A cjson decode/encode round trip is avoided on purpose: it would turn [] into {},
-- round floats, and raise on a malformed entry after the LPOP (Lua cannot roll back).
-- KEYS[1]  ready list            queues:{NAME}
-- KEYS[2]  delayed zset          queues:{NAME}:delayed
-- KEYS[3]  reserved zset         queues:{NAME}:reserved
-- KEYS[4]  notify list           queues:{NAME}:notify
-- KEYS[5]  paused flag           queues:{NAME}:paused
-- KEYS[6]  high-priority zset    queues:{NAME}:prio:hi   (score: see push_priority.lua)
-- KEYS[7]  low-priority zset     queues:{NAME}:prio:lo
-- KEYS[8]  priority sequence     queues:{NAME}:prio:seq
-- KEYS[9]  optional: uuid index of the ready list   queues:{NAME}:index (see push.lua)
-- KEYS[10] optional: uuid index of the delayed set  queues:{NAME}:due-index
-- KEYS[11] optional: the index's sequence           queues:{NAME}:seq
-- ARGV[1]  now (unix time)
-- ARGV[2]  lease expiry (now + retry_after), or '+inf'
-- ARGV[3]  how many due jobs to move per source at most
-- ARGV[4]  '1' to reclaim expired reservations, '0' when retry_after is unset
-- ARGV[5]  the reserving worker's id as a JSON string without escapes, or ''
-- ARGV[6]  the reservation token prefix (letters, digits, '-', ':', '.')
-- ARGV[7]  how many jobs to reserve at most (1 when absent)
-- ARGV[8]  notify tokens the caller already took for this queue (a BLPOP that woke it;
--          0 when absent): the pop trims that many fewer, so k jobs cost k tokens
-- ARGV[9]  bytes a batch may hold: no further job is reserved once the reserved entries
--          reach it (the first always is; 0 or absent: no bound), so a prefetch of
--          multi-megabyte entries does not hold them all in the worker at once
-- Returns the reserved payloads in queue order (an empty list when the queue is
-- empty), or -1 when it is paused.
local flagged = redis.call('EXISTS', KEYS[5], KEYS[6], KEYS[7])
if flagged > 0 and redis.call('EXISTS', KEYS[5]) == 1 then return -1 end
local prioritised = flagged > 0  -- a priority set has jobs (or gets some in step 1)

-- The priority a due entry carries, or nil: "priority" right after attempts and the
-- reservation stamps pop adds (release re-encodes without them; an expired reservation
-- still has them). Anchored matches from a position, no copies: an entry without a
-- priority costs a few compares.
local function priority_of(entry)
  local _, at = string.find(entry, '^{"attempts":%d+,')
  if not at then return nil end
  local _, stop = string.find(entry, '^"reservation":"[^"\\]*",', at + 1)
  if stop then at = stop end
  _, stop = string.find(entry, '^"reservedBy":"[^"\\]*",', at + 1)
  if stop then at = stop end
  local value = string.match(entry, '^"priority":(%-?%d+)[,}]', at + 1)
  if not value then return nil end
  value = tonumber(value)
  if value == 0 or value > 100 or value < -100 then return nil end
  return value
end

local function push_prioritised(entry, priority)
  local sequence = redis.call('INCR', KEYS[8])
  local key = KEYS[6]
  if priority < 0 then key = KEYS[7] end
  redis.call('ZADD', key, (100 - priority) * 17592186044416 + sequence, entry)
  prioritised = true
end

-- The uuid indexes (optional keys): a job moved to the tail gets the next sequence, one
-- leaving the delayed set or the head of the ready list leaves its index.
local indexed = KEYS[11] ~= nil
local function uuid_of(entry)
  return string.match(entry, '^{[^{}%[%]]-"uuid":"([^"\\]+)"')
end
local function index_moved(source, entries)
  if not indexed then return end
  for _, entry in ipairs(entries) do
    local id = uuid_of(entry)
    if id then
      if source == KEYS[2] then redis.call('ZREM', KEYS[10], id) end
      redis.call('ZADD', KEYS[9], redis.call('INCR', KEYS[11]), id)
    end
  end
end

local function migrate(source)
  local due = redis.call('ZRANGEBYSCORE', source, '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
  local count = #due
  if count == 0 then return end
  redis.call('ZREMRANGEBYRANK', source, 0, count - 1)
  local plain = {}
  for i = 1, count do
    local priority = priority_of(due[i])
    if priority then push_prioritised(due[i], priority) else plain[#plain + 1] = due[i] end
  end
  for first = 1, #plain, 100 do
    redis.call('RPUSH', KEYS[1], unpack(plain, first, math.min(first + 99, #plain)))
  end
  index_moved(source, plain)
  if indexed and source == KEYS[2] and #plain < count then
    for i = 1, count do  -- prioritised ones left the delayed set too
      local id = priority_of(due[i]) and uuid_of(due[i])
      if id then redis.call('ZREM', KEYS[10], id) end
    end
  end
  for first = 1, count, 100 do
    local tokens = {}
    for i = first, math.min(first + 99, count) do tokens[#tokens + 1] = '1' end
    redis.call('RPUSH', KEYS[4], unpack(tokens))
  end
end

local function zpopmin(key)
  local head = redis.call('ZPOPMIN', key)
  return head[1]
end

migrate(KEYS[2])
if ARGV[4] == '1' then migrate(KEYS[3]) end

local owner = ''
if #ARGV[5] > 0 then owner = '"reservedBy":' .. ARGV[5] .. ',' end
local wanted = tonumber(ARGV[7] or '1') or 1
local budget = tonumber(ARGV[9] or '0') or 0
local reserved_bytes = 0
local reserved = {}

-- The entry reserved for a job: its delivery counted and stamped (steps 2-3).
local function stamped(job, i)
  local stamp = '"reservation":"' .. ARGV[6] .. '.' .. i .. '",' .. owner
  local digits = string.match(job, '^{"attempts":(%d+),')
  if digits and #digits <= 9 then
    local rest = string.sub(job, 14 + #digits)
    local _, stop = string.find(rest, '^"reservation":"[^"\\]*",')
    if stop then rest = string.sub(rest, stop + 1) end
    _, stop = string.find(rest, '^"reservedBy":"[^"\\]*",')
    if stop then rest = string.sub(rest, stop + 1) end
    return '{"attempts":' .. (tonumber(digits) + 1) .. ',' .. stamp .. rest
  end
  return '{"attempts":1,' .. stamp .. '"wrapped":' .. cjson.encode(job) .. '}'
end

if not prioritised then
  -- No priority set has jobs: the batch is the head of the ready list, read with LRANGE
  -- and cut with one LTRIM, its uuids leave the index in one ZREM and its members enter
  -- the reserved set in one ZADD (chunks of 100), instead of three calls a job: what a
  -- batch costs Redis then hardly grows with its size. Same entries, same order, same
  -- stamps and the same byte bound as the loop below. With a bound, the head is read
  -- one entry first, then at most READ_AHEAD at a time and no more than the bytes left
  -- would hold at the largest entry seen so far: entries of megabytes are not copied
  -- into the script past the bound (a few at worst, when small ones came first).
  local READ_AHEAD = 8
  local ids, scored = {}, {}
  local largest, full = 0, false
  while #reserved < wanted and not full do
    local taken = #reserved
    local chunk = wanted - taken
    if budget > 0 then
      if taken == 0 then
        chunk = 1
      else
        chunk = math.min(chunk, READ_AHEAD,
                         math.max(1, math.ceil((budget - reserved_bytes) / largest)))
      end
    end
    local heads = redis.call('LRANGE', KEYS[1], taken, taken + chunk - 1)
    for _, job in ipairs(heads) do
      local entry = stamped(job, #reserved + 1)
      reserved[#reserved + 1] = entry
      scored[#scored + 1] = ARGV[2]
      scored[#scored + 1] = entry
      local id = indexed and uuid_of(job)
      if id then ids[#ids + 1] = id end
      if #entry > largest then largest = #entry end
      reserved_bytes = reserved_bytes + #entry
      if budget > 0 and reserved_bytes >= budget then full = true break end
    end
    if #heads < chunk then break end  -- the list is shorter than the batch
  end
  if #reserved > 0 then
    redis.call('LTRIM', KEYS[1], #reserved, -1)
    for first = 1, #ids, 100 do
      redis.call('ZREM', KEYS[9], unpack(ids, first, math.min(first + 99, #ids)))
    end
    for first = 1, #scored, 200 do
      redis.call('ZADD', KEYS[3], unpack(scored, first, math.min(first + 199, #scored)))
    end
  end
  wanted = 0  -- the loop below is the prioritised path's
end

for i = 1, wanted do
  local job = prioritised and zpopmin(KEYS[6])
  if not job then
    job = redis.call('LPOP', KEYS[1])
    local id = job and indexed and uuid_of(job)
    if id then redis.call('ZREM', KEYS[9], id) end
  end
  if not job and prioritised then job = zpopmin(KEYS[7]) end
  if not job then break end
  local entry = stamped(job, i)
  redis.call('ZADD', KEYS[3], ARGV[2], entry)
  reserved[#reserved + 1] = entry
  reserved_bytes = reserved_bytes + #entry
  if budget > 0 and reserved_bytes >= budget then break end
end
local trim = #reserved - (tonumber(ARGV[8] or '0') or 0)
if trim > 0 then redis.call('LTRIM', KEYS[4], trim, -1) end
return reserved
