-- push: append jobs to a queue's ready list, one notify token per job.
-- KEYS[1]  ready list            queues:{NAME}
-- KEYS[2]  notify list           queues:{NAME}:notify
-- With 4 or 5 keys (the driver passes them):
-- KEYS[3]  uuid index            queues:{NAME}:index   (zset uuid -> sequence)
-- KEYS[4]  its sequence          queues:{NAME}:seq
-- The last key, when there are 3 or 5: a claim key in the same hash tag. When given, the
--          push happens only if this call creates it (SET NX with a TTL): the first
--          caller for a claim pushes, every other one pushes nothing (schedules: one
--          push a slot).
-- ARGV     without a claim key: the encoded payloads, in order.
--          with one: ARGV[1] the claim's TTL in seconds, ARGV[2] the value it holds,
--          then the payloads.
-- Returns the ready list's new length; 0 when the claim was already taken.
-- The uuid index (README, "Redis layout") scores each ready job's uuid by a
-- sequence that grows towards the tail, so ZRANK is the job's index in the list: the
-- dashboard finds a job by uuid at any queue length (locate.lua). Entries without a
-- top-level uuid are not indexed (the dashboard then scans for them).
local indexed = #KEYS >= 4
local claim = nil
if #KEYS == 3 or #KEYS == 5 then claim = KEYS[#KEYS] end
local first_payload = 1
if claim then
  if not redis.call('SET', claim, ARGV[2], 'NX', 'EX', ARGV[1]) then return 0 end
  first_payload = 3
end
local n = #ARGV
local length = 0
if n == first_payload then  -- one job (every .delay()): no token table, no unpack
  length = redis.call('RPUSH', KEYS[1], ARGV[n])
  redis.call('RPUSH', KEYS[2], '1')
else
  for first = first_payload, n, 100 do
    local last = math.min(first + 99, n)
    length = redis.call('RPUSH', KEYS[1], unpack(ARGV, first, last))
    local tokens = {}
    for i = first, last do tokens[#tokens + 1] = '1' end
    redis.call('RPUSH', KEYS[2], unpack(tokens))
  end
end
if indexed then
  local count = n - first_payload + 1
  local sequence = redis.call('INCRBY', KEYS[4], count) - count
  for i = first_payload, n do
    local id = string.match(ARGV[i], '^{[^{}%[%]]-"uuid":"([^"\\]+)"')
    if id then redis.call('ZADD', KEYS[3], sequence + i - first_payload + 1, id) end
  end
end
return length
