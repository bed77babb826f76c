-- push: append jobs to a queue's ready list, one notify token per job.
-- KEYS[1]  ready list            queues:{NAME}
-- KEYS[2]  notify list           queues:{NAME}:notify
-- ARGV[1..n] encoded payloads, in order
-- Returns the ready list's new length.
local n = #ARGV
local length = 0
for first = 1, n, 100 do
  local last = math.min(first + 99, n)
  length = redis.call('RPUSH', KEYS[1], unpack(ARGV, first, last))
  local tokens = {}
  for i = first, last do tokens[#tokens + 1] = '1' end
  redis.call('RPUSH', KEYS[2], unpack(tokens))
end
return length
