-- record_completions: fold a worker's batch of finished jobs into Horizon's metrics, the
-- Prometheus counters and the recent-successes list, in one call.
-- One call per batch (not per job) because each script call has a fixed cost in Redis
-- that, per job, came to more than the writes themselves; the worker sums what can be
-- summed (count and runtime per job name, per queue, per Prometheus series) first.
-- KEYS[1] measured jobs set     KEYS[2] measured queues set
-- KEYS[3] completed zset        KEYS[4] Prometheus series set
-- then, in this order: one job metrics hash per entry of "jobs", one queue metrics hash
-- per entry of "queues", one series hash per entry of "series", one record hash per
-- record (all under the {horizon} hash tag).
-- ARGV[1] JSON: {"keep": seconds to keep records (0: keep none), "max": most records,
--   "prefix": key prefix of the record hashes,
--   "jobs": [[name, count, runtime ms], ...], "queues": [[label, count, runtime ms], ...],
--   "series": [[series name, {field: integer increment}, {field: float increment}], ...]}
-- ARGV[2..] six per record: uuid, job name, "connection:queue", runtime ms, completed at,
--   payload JSON
-- The count cap keeps Redis memory bounded whatever the throughput: the oldest records
-- beyond it are dropped here (at most 1000 per call).
local batch = cjson.decode(ARGV[1])
local at = 4

for _, row in ipairs(batch.jobs) do
  at = at + 1
  redis.call('HINCRBY', KEYS[at], 'count', row[2])
  redis.call('HINCRBYFLOAT', KEYS[at], 'runtime_ms', row[3])
  redis.call('SADD', KEYS[1], row[1])
end
for _, row in ipairs(batch.queues) do
  at = at + 1
  redis.call('HINCRBY', KEYS[at], 'count', row[2])
  redis.call('HINCRBYFLOAT', KEYS[at], 'runtime_ms', row[3])
  redis.call('SADD', KEYS[2], row[1])
end
for _, row in ipairs(batch.series) do
  at = at + 1
  redis.call('SADD', KEYS[4], row[1])
  for field, increment in pairs(row[2]) do redis.call('HINCRBY', KEYS[at], field, increment) end
  for field, increment in pairs(row[3]) do
    redis.call('HINCRBYFLOAT', KEYS[at], field, increment)
  end
end

local keep = tonumber(batch.keep)
if keep <= 0 or #ARGV < 7 then return 1 end
local scored = {}
for i = 2, #ARGV, 6 do
  at = at + 1
  redis.call('HSET', KEYS[at], 'uuid', ARGV[i], 'name', ARGV[i + 1], 'queue', ARGV[i + 2],
             'runtime_ms', ARGV[i + 3], 'completed_at', ARGV[i + 4], 'payload', ARGV[i + 5])
  redis.call('EXPIRE', KEYS[at], keep)
  scored[#scored + 1] = ARGV[i + 4]
  scored[#scored + 1] = ARGV[i]
end
for first = 1, #scored, 200 do
  redis.call('ZADD', KEYS[3], unpack(scored, first, math.min(first + 199, #scored)))
end
local excess = redis.call('ZCARD', KEYS[3]) - tonumber(batch.max)
if excess > 0 then
  local dropped = redis.call('ZPOPMIN', KEYS[3], math.min(excess, 1000))
  local doomed = {}
  for i = 1, #dropped, 2 do doomed[#doomed + 1] = batch.prefix .. dropped[i] end
  for first = 1, #doomed, 200 do
    redis.call('DEL', unpack(doomed, first, math.min(first + 199, #doomed)))
  end
end
return 1
