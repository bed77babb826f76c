-- result_running: an attempt of a job that keeps its result starts (queueing/results).
-- KEYS[1]  the result's hash                          queueing:result:{UUID}
-- KEYS[2]  its ready list                             queueing:result:{UUID}:ready
-- KEYS[3..] companion lists, expired with the record  queueing:result:{UUID}:workers...
-- ARGV[1]  unix time now
-- ARGV[2]  seconds the running record lives (keep + RUNNING_FOR)
-- ARGV[3..] more field, value pairs (a Task's own fields)
-- A record that was final (a failed job retried) loses its outcome and its wake-up
-- token, so a waiter blocks again instead of waking at once.
if redis.call('HEXISTS', KEYS[1], 'finished_at') == 1 then
  redis.call('HDEL', KEYS[1], 'value', 'exc_type', 'message', 'finished_at')
  redis.call('DEL', KEYS[2])
end
local fields = {'status', 'running', 'last_attempted_at', ARGV[1]}
for i = 3, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('HSETNX', KEYS[1], 'started_at', ARGV[1])
for i = 1, #KEYS do
  if i ~= 2 then redis.call('EXPIRE', KEYS[i], ARGV[2]) end
end
return 1
