-- result_running: an attempt of a job that keeps its result starts (queueing/results).
-- KEYS[1]  the result's hash                          queueing:result:{UUID}
-- KEYS[2]  its ready list                             queueing:result:{UUID}:ready
-- KEYS[3..] companion lists, expired with the record  queueing:result:{UUID}:workers...
-- ARGV[1]  unix time now
-- ARGV[2]  seconds the running record lives (keep + RUNNING_FOR)
-- ARGV[3]  "" or this attempt's worker id, appended to KEYS[3] (a Task's worker ids)
-- ARGV[4]  how many entries KEYS[3] keeps (the latest)
-- ARGV[5..] more field, value pairs (a Task's own fields)
-- A record that was final (a failed job retried) loses its outcome and its wake-up
-- token, so a waiter blocks again instead of waking at once. started_at is the first
-- attempt's (one HMGET tells both: one read more than a bare HSET, no more).
local seen = redis.call('HMGET', KEYS[1], 'finished_at', 'started_at')
if seen[1] then
  redis.call('HDEL', KEYS[1], 'value', 'exc_type', 'message', 'finished_at')
  redis.call('DEL', KEYS[2])
end
local fields = {'status', 'running', 'last_attempted_at', ARGV[1]}
if not seen[2] then
  fields[#fields + 1] = 'started_at'
  fields[#fields + 1] = ARGV[1]
end
for i = 5, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(fields))
if ARGV[3] ~= '' and KEYS[3] then
  redis.call('RPUSH', KEYS[3], ARGV[3])
  redis.call('LTRIM', KEYS[3], -tonumber(ARGV[4]), -1)
end
for i = 1, #KEYS do
  if i ~= 2 then redis.call('EXPIRE', KEYS[i], ARGV[2]) end
end
return 1
