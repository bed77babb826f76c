-- take_snapshot: move one metrics hash into its snapshot history and reset it.
-- KEYS[1] metrics hash (count, runtime_ms)   KEYS[2] snapshots zset
-- ARGV[1] now (unix time)   ARGV[2] drop snapshots taken before this time
-- ARGV[3] minutes since the previous snapshot (for jobs per minute)
-- ARGV[4] optional JSON object of more fields for the entry (failed, wait, queue depth)
-- Returns {count, average runtime ms} as strings.
local count = tonumber(redis.call('HGET', KEYS[1], 'count') or '0')
local runtime = tonumber(redis.call('HGET', KEYS[1], 'runtime_ms') or '0')
redis.call('DEL', KEYS[1])
local average = 0
if count > 0 then average = runtime / count end
local per_minute = count / math.max(tonumber(ARGV[3]), 0.0001)
local entry = {time = tonumber(ARGV[1]), count = count, throughput = per_minute,
               runtime = average}
if ARGV[4] and ARGV[4] ~= '' then
  for name, value in pairs(cjson.decode(ARGV[4])) do
    if entry[name] == nil then entry[name] = value end
  end
end
redis.call('ZADD', KEYS[2], ARGV[1], cjson.encode(entry))
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[2])
return {tostring(count), tostring(average)}
