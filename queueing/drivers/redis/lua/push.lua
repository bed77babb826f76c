-- push: append jobs to a queue's ready list, one notify token per job.
-- KEYS[1]  ready list            queues:{NAME}
-- KEYS[2]  notify list           queues:{NAME}:notify
-- KEYS[3]  optional: a claim key in the same hash tag. When given, the push happens
--          only if this call creates it (SET NX with a TTL): the first caller for a
--          claim pushes, every other one pushes nothing (schedules: one push a slot).
-- ARGV     without KEYS[3]: the encoded payloads, in order.
--          with KEYS[3]: ARGV[1] the claim's TTL in seconds, ARGV[2] the value it
--          holds, then the payloads.
-- Returns the ready list's new length; 0 when the claim was already taken.
local first_payload = 1
if KEYS[3] then
  if not redis.call('SET', KEYS[3], ARGV[2], 'NX', 'EX', ARGV[1]) then return 0 end
  first_payload = 3
end
local n = #ARGV
local length = 0
for first = first_payload, n, 100 do
  local last = math.min(first + 99, n)
  length = redis.call('RPUSH', KEYS[1], unpack(ARGV, first, last))
  local tokens = {}
  for i = first, last do tokens[#tokens + 1] = '1' end
  redis.call('RPUSH', KEYS[2], unpack(tokens))
end
return length
