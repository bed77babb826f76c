-- debounce: schedule a job for the end of its window, replacing the one scheduled before
-- under the same id if it is still waiting, so only the last dispatch of a burst runs.
-- KEYS[1]  delayed zset of the job's queue     queues:{NAME}:delayed
-- KEYS[2]  the burst's latest entry            queues:{NAME}:debounce:JOB:ID
-- ARGV[1]  when the new entry becomes due (unix time)
-- ARGV[2]  the new encoded payload
-- ARGV[3]  how long the latest entry is remembered (milliseconds)
-- Returns 1 when an earlier entry was replaced, 0 otherwise. An earlier entry already
-- moved to the ready list (its window had passed) is left alone: it runs.
local replaced = 0
local previous = redis.call('GET', KEYS[2])
if previous then
  replaced = redis.call('ZREM', KEYS[1], previous)
end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
return replaced
