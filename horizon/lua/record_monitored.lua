-- record_monitored: keep one job on one watched tag's list (horizon/repositories/monitored.py).
-- KEYS[1] the watched tags set   KEYS[2] the tag's jobs zset (uuid -> first recorded)
-- KEYS[3] the tag's records hash (uuid -> JSON record)   KEYS[4] the tag's failures zset
-- ARGV[1] the tag   ARGV[2] uuid   ARGV[3] status: "pending", "completed" or "failed"
-- ARGV[4] the JSON record   ARGV[5] now (unix time)   ARGV[6] seconds to keep a job
-- ARGV[7] most jobs kept per tag (trim.monitored_max)
-- A tag no longer watched records nothing (its keys were deleted when it was stopped;
-- a worker's cached copy of the watched set may be a second or two old). A "pending"
-- record never replaces a later one: the dispatcher writes it before the push, but a
-- retry or a failover drain pushes the same uuid again after it settled once.
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 0 then return 0 end
local uuid, status, now = ARGV[2], ARGV[3], tonumber(ARGV[5])
redis.call('ZADD', KEYS[2], 'NX', now, uuid)
if status == 'pending' then
  redis.call('HSETNX', KEYS[3], uuid, ARGV[4])
else
  redis.call('HSET', KEYS[3], uuid, ARGV[4])
  if status == 'failed' then
    redis.call('ZADD', KEYS[4], now, uuid)
  else
    redis.call('ZREM', KEYS[4], uuid)
  end
end
-- Jobs past the tag's retention go, the oldest first, at most 500 a call; then the
-- oldest past the count cap, so a busy tag stays bounded however long it is kept.
local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. (now - tonumber(ARGV[6])),
                       'LIMIT', 0, 500)
local excess = redis.call('ZCARD', KEYS[2]) - #old - tonumber(ARGV[7])
if excess > 0 then
  for _, extra in ipairs(redis.call('ZRANGE', KEYS[2], #old, #old + math.min(excess, 500) - 1)) do
    old[#old + 1] = extra
  end
end
if #old > 0 then
  redis.call('ZREM', KEYS[2], unpack(old))
  redis.call('HDEL', KEYS[3], unpack(old))
  redis.call('ZREM', KEYS[4], unpack(old))
end
return 1
