-- prune_series: drop the Prometheus series of jobs that are gone (no outcome counted for
-- HORIZON["trim"]["prometheus"] minutes: a renamed or deleted job, a removed queue), so
-- {horizon}:prom:series and every scrape stop growing with the names ever seen.
-- KEYS[1] the series set {horizon}:prom:series   KEYS[2] last seen zset {horizon}:prom:seen
-- KEYS[3] the snapshot cursor hash (a series' field there goes with it)
-- ARGV[1] unix time: series last seen before it go   ARGV[2] most series dropped a call
-- ARGV[3] now   ARGV[4] the series hash prefix ({horizon}:prom:), + series name
-- A series counted before last-seen times existed gets now (a full window from here).
for _, name in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  redis.call('ZADD', KEYS[2], 'NX', ARGV[3], name)
end
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[1],
                        'LIMIT', 0, tonumber(ARGV[2]))
for _, name in ipairs(gone) do
  redis.call('DEL', ARGV[4] .. name)
  redis.call('SREM', KEYS[1], name)
  redis.call('ZREM', KEYS[2], name)
  redis.call('HDEL', KEYS[3], name)
end
return #gone
