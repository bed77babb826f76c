-- later: schedule jobs in a queue's delayed set (no notify token until they are due).
-- KEYS[1]  delayed zset          queues:{NAME}:delayed
-- ARGV     pairs: available-at unix time, encoded payload
-- Returns the number of jobs added.
local added = 0
for i = 1, #ARGV, 2 do
  added = added + redis.call('ZADD', KEYS[1], ARGV[i], ARGV[i + 1])
end
return added
