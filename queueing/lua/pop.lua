-- pop: reserve the next ready job of one queue, atomically.
--   1. move due delayed jobs, then expired reservations, to the tail of the ready list
--      (at most ARGV[3] of each, with one notify token per job moved);
--   2. LPOP the ready list; add 1 to the payload's attempts;
--   3. ZADD the new string to the reserved set, scored by the lease expiry;
--   4. drop one notify token.
-- The payload starts with {"attempts":N, so the count is bumped by string surgery; an
-- entry that does not start that way is reserved unchanged (the worker fails it as
-- malformed) instead of raising here after the LPOP, which Lua could not roll back.
-- KEYS[1]  ready list            queues:{NAME}
-- KEYS[2]  delayed zset          queues:{NAME}:delayed
-- KEYS[3]  reserved zset         queues:{NAME}:reserved
-- KEYS[4]  notify list           queues:{NAME}:notify
-- ARGV[1]  now (unix time)
-- ARGV[2]  lease expiry (now + retry_after), or '+inf'
-- ARGV[3]  how many due jobs to move per source at most
-- ARGV[4]  '1' to reclaim expired reservations, '0' when retry_after is unset
-- ARGV[5]  the reserving worker's id as a JSON string (e.g. "host:1234"), or ''; it is
--          written as "reservedBy" right after attempts, replacing an earlier one
-- Returns the reserved payload, or false when the queue is empty.
local function migrate(source)
  local due = redis.call('ZRANGEBYSCORE', source, '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
  local count = #due
  if count == 0 then return end
  redis.call('ZREMRANGEBYRANK', source, 0, count - 1)
  for first = 1, count, 100 do
    local last = math.min(first + 99, count)
    redis.call('RPUSH', KEYS[1], unpack(due, first, last))
    local tokens = {}
    for i = first, last do tokens[#tokens + 1] = '1' end
    redis.call('RPUSH', KEYS[4], unpack(tokens))
  end
end

migrate(KEYS[2])
if ARGV[4] == '1' then migrate(KEYS[3]) end

local job = redis.call('LPOP', KEYS[1])
if not job then return false end

local reserved = job
local digits = string.match(job, '^{"attempts":(%d+),')
if digits then
  local rest = string.sub(job, 14 + #digits)
  local _, owner_end = string.find(rest, '^"reservedBy":"[^"]*",')
  if owner_end then rest = string.sub(rest, owner_end + 1) end
  local owner = ''
  if ARGV[5] and #ARGV[5] > 0 then owner = '"reservedBy":' .. ARGV[5] .. ',' end
  reserved = '{"attempts":' .. (tonumber(digits) + 1) .. ',' .. owner .. rest
end
redis.call('ZADD', KEYS[3], ARGV[2], reserved)
redis.call('LPOP', KEYS[4])
return reserved
