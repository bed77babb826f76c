-- record_unrun: keep one job settled without running (expired before it could start, or
-- dropped because a model argument's row was gone), for the dashboard's Expired or
-- Dropped list and the job page, and trim that list in the same call.
-- KEYS[1] the kind's zset (uuid -> settled at)   KEYS[2] its records hash (uuid -> JSON)
-- ARGV[1] uuid   ARGV[2] record JSON   ARGV[3] now (unix time)
-- ARGV[4] seconds to keep records (0: keep none)   ARGV[5] most records kept
local keep = tonumber(ARGV[4])
if keep <= 0 then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
-- Drop records past their time (oldest first, at most 100 a call), then past the cap.
local dropped = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. (tonumber(ARGV[3]) - keep),
                           'LIMIT', 0, 100)
local excess = redis.call('ZCARD', KEYS[1]) - #dropped - tonumber(ARGV[5])
if excess > 0 then
  local more = redis.call('ZRANGE', KEYS[1], #dropped, #dropped + math.min(excess, 100) - 1)
  for _, uuid in ipairs(more) do dropped[#dropped + 1] = uuid end
end
if #dropped > 0 then
  redis.call('ZREM', KEYS[1], unpack(dropped))
  redis.call('HDEL', KEYS[2], unpack(dropped))
end
return 1
