-- record_completions: fold a worker's batch of finished jobs into Horizon's metrics, the
-- Prometheus counters and the recent-successes list, in one call.
-- One call per batch (not per job) because each script call has a fixed cost in Redis
-- that, per job, came to more than the writes themselves; the worker sums what can be
-- summed (count and runtime per job name, per queue, per Prometheus series) first.
-- KEYS[1] measured jobs set     KEYS[2] measured queues set
-- KEYS[3] completed zset        KEYS[4] Prometheus series set
-- KEYS[5] completed records hash  KEYS[6] the attempts index (zset: uuid -> deadline)
-- KEYS[7] Prometheus series last seen (zset: series name -> unix time; the master prunes
--   series unseen for HORIZON["trim"]["prometheus"] minutes)
-- then, in this order: one job metrics hash per entry of "jobs", one queue metrics hash
-- per entry of "queues", one series hash per entry of "series" (all under the
-- {horizon} hash tag).
-- ARGV[1] JSON: {"keep": seconds to keep records (0: keep none), "max": most records,
--   "now": unix time, "timelines": the prefix of a job's attempts list key (+ uuid),
--   "jobs": [[name, count, runtime ms], ...], "queues": [[label, count, runtime ms], ...],
--   "series": [[series name, {field: integer increment}, {field: float increment}], ...]}
-- ARGV[2..] six per record: uuid, job name, "connection:queue", runtime ms, completed at,
--   payload JSON
local batch = cjson.decode(ARGV[1])
local at = 7

-- job metrics, then queue metrics: the same sums, each set of names in its own set key
for set_key, rows in ipairs({batch.jobs, batch.queues}) do
  for _, row in ipairs(rows) do
    at = at + 1
    redis.call('HINCRBY', KEYS[at], 'count', row[2])
    redis.call('HINCRBYFLOAT', KEYS[at], 'runtime_ms', row[3])
    redis.call('SADD', KEYS[set_key], row[1])
  end
end
for _, row in ipairs(batch.series) do
  at = at + 1
  redis.call('SADD', KEYS[4], row[1])
  redis.call('ZADD', KEYS[7], batch.now, row[1])
  for field, increment in pairs(row[2]) do redis.call('HINCRBY', KEYS[at], field, increment) end
  for field, increment in pairs(row[3]) do
    redis.call('HINCRBYFLOAT', KEYS[at], field, increment)
  end
end

local keep = tonumber(batch.keep)
if keep <= 0 then return 1 end
-- The recent-success records: one field each in one hash (uuid -> record), indexed by
-- completion time in the zset; a record is its fields joined by newlines, the payload
-- last (see horizon/repositories/recent.py). One HSET and one ZADD per batch.
local records, scored = {}, {}
for i = 2, #ARGV, 6 do
  records[#records + 1] = ARGV[i]
  records[#records + 1] = ARGV[i] .. '\n' .. ARGV[i + 1] .. '\n' .. ARGV[i + 2] .. '\n' ..
                          ARGV[i + 3] .. '\n' .. ARGV[i + 4] .. '\n' .. ARGV[i + 5]
  scored[#scored + 1] = ARGV[i + 4]
  scored[#scored + 1] = ARGV[i]
end
for first = 1, #records, 200 do
  redis.call('HSET', KEYS[5], unpack(records, first, math.min(first + 199, #records)))
  redis.call('ZADD', KEYS[3], unpack(scored, first, math.min(first + 199, #scored)))
end
-- Drop records past their time (the oldest first, at most 1000 a call), then past the
-- count cap: memory stays bounded whatever the throughput, master running or not.
local dropped = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', '(' .. (batch.now - keep),
                           'LIMIT', 0, 1000)
local excess = redis.call('ZCARD', KEYS[3]) - #dropped - tonumber(batch.max)
if excess > 0 then
  local over = redis.call('ZRANGE', KEYS[3], #dropped, #dropped + math.min(excess, 1000) - 1)
  for _, uuid in ipairs(over) do dropped[#dropped + 1] = uuid end
end
-- A dropped record's job timeline (horizon/attempts.py) goes with it: a success keeps
-- one only after earlier attempts, and the index says which do (its key shares the
-- {horizon} hash tag, so this stays in one cluster slot).
for first = 1, #dropped, 200 do
  local last = math.min(first + 199, #dropped)
  redis.call('ZREM', KEYS[3], unpack(dropped, first, last))
  redis.call('HDEL', KEYS[5], unpack(dropped, first, last))
  local indexed = redis.call('ZMSCORE', KEYS[6], unpack(dropped, first, last))
  for i = first, last do
    if indexed[i - first + 1] then
      redis.call('DEL', batch.timelines .. dropped[i])
      redis.call('ZREM', KEYS[6], dropped[i])
    end
  end
end
return 1
