-- result_running: an attempt of a job that keeps its result starts (queueing/results).
-- KEYS[1]  the result's hash                          queueing:result:{UUID}
-- ARGV[1]  unix time now
-- ARGV[2]  seconds the running record lives (keep_result + RUNNING_FOR)
redis.call('HSET', KEYS[1], 'status', 'running', 'started_at', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
