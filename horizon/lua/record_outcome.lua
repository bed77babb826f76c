-- record_outcome: count one job outcome for the Prometheus endpoint (never reset).
-- KEYS[1] the series hash {horizon}:prom:<connection:queue>|<job>
-- KEYS[2] the set of series names {horizon}:prom:series
-- KEYS[3] series last seen {horizon}:prom:seen (zset: series name -> unix time)
-- ARGV[1] series name   ARGV[2] outcome field (processed|failed|released|timed_out|
--         cancelled|expired|dropped), or '' (an attempt whose failure is counted when it is stored)
-- ARGV[3] runtime bucket index, or '' (no runtime)   ARGV[4] runtime (seconds)
-- ARGV[5] wait bucket index, or '' (not a first delivery)   ARGV[6] wait (seconds)
-- ARGV[7] now (unix time)
-- Buckets are stored per bucket (not cumulative); the endpoint sums them up.
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[7], ARGV[1])
if ARGV[2] ~= '' then
  redis.call('HINCRBY', KEYS[1], ARGV[2], 1)
end
if ARGV[3] ~= '' then
  redis.call('HINCRBY', KEYS[1], 'rt:' .. ARGV[3], 1)
  redis.call('HINCRBYFLOAT', KEYS[1], 'rt_sum', ARGV[4])
end
if ARGV[5] ~= '' then
  redis.call('HINCRBY', KEYS[1], 'wait:' .. ARGV[5], 1)
  redis.call('HINCRBYFLOAT', KEYS[1], 'wait_sum', ARGV[6])
end
return 1
