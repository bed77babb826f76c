-- push: append jobs to a queue's ready list, one notify token per job.
-- KEYS[1]  ready list            queues:{NAME}
-- KEYS[2]  notify list           queues:{NAME}:notify
-- KEYS[3]  optional: uuid index   queues:{NAME}:index   (zset uuid -> sequence)
-- KEYS[4]  optional: sequence     queues:{NAME}:seq
-- ARGV[1..n] encoded payloads, in order
-- Returns the ready list's new length.
-- The uuid index (docs/operations.md#finding-a-job) scores each ready job's uuid by a
-- sequence that grows towards the tail, so ZRANK is the job's index in the list: the
-- dashboard finds a job by uuid at any queue length. Entries without a top-level uuid
-- are not indexed (the dashboard then scans for them).
local n = #ARGV
local length = 0
for first = 1, n, 100 do
  local last = math.min(first + 99, n)
  length = redis.call('RPUSH', KEYS[1], unpack(ARGV, first, last))
  local tokens = {}
  for i = first, last do tokens[#tokens + 1] = '1' end
  redis.call('RPUSH', KEYS[2], unpack(tokens))
end
if #KEYS >= 4 then
  local function uuid_of(entry)  -- the top-level "uuid" (before any nested object), or nil
    return string.match(entry, '^{[^{}%[%]]-"uuid":"([^"\\]+)"')
  end
  local sequence = redis.call('INCRBY', KEYS[4], n) - n
  for i = 1, n do
    local id = uuid_of(ARGV[i])
    if id then redis.call('ZADD', KEYS[3], sequence + i, id) end
  end
end
return length
