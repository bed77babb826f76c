-- record_completion: fold one finished job into the running metrics and the recent list.
-- KEYS[1] job metrics hash      KEYS[2] queue metrics hash
-- KEYS[3] measured jobs set     KEYS[4] measured queues set
-- KEYS[5] completed zset        KEYS[6] this job's completed hash
-- ARGV[1] runtime (ms)  ARGV[2] now (unix time)  ARGV[3] uuid  ARGV[4] job name
-- ARGV[5] "connection:queue"    ARGV[6] payload JSON  ARGV[7] seconds to keep the record
-- ARGV[8] most records to keep  ARGV[9] key prefix of the records (same hash tag as KEYS)
-- The count cap keeps Redis memory bounded whatever the throughput; the oldest records
-- beyond it are dropped here, one or two per call.
redis.call('HINCRBY', KEYS[1], 'count', 1)
redis.call('HINCRBYFLOAT', KEYS[1], 'runtime_ms', ARGV[1])
redis.call('HINCRBY', KEYS[2], 'count', 1)
redis.call('HINCRBYFLOAT', KEYS[2], 'runtime_ms', ARGV[1])
redis.call('SADD', KEYS[3], ARGV[4])
redis.call('SADD', KEYS[4], ARGV[5])
if tonumber(ARGV[7]) > 0 then
  redis.call('ZADD', KEYS[5], ARGV[2], ARGV[3])
  redis.call('HSET', KEYS[6], 'uuid', ARGV[3], 'name', ARGV[4], 'queue', ARGV[5],
             'runtime_ms', ARGV[1], 'completed_at', ARGV[2], 'payload', ARGV[6])
  redis.call('EXPIRE', KEYS[6], ARGV[7])
  local excess = redis.call('ZCARD', KEYS[5]) - tonumber(ARGV[8])
  if excess > 0 then
    local dropped = redis.call('ZPOPMIN', KEYS[5], math.min(excess, 100))
    for i = 1, #dropped, 2 do redis.call('DEL', ARGV[9] .. dropped[i]) end
  end
end
return 1
