-- window: admit one start into a sliding window of at most ARGV[1] starts per ARGV[2] µs.
-- The clock is the Redis server's (TIME), so hosts with skewed clocks share one window.
-- KEYS[1]  zset of admitted starts (member: a unique token, score: µs)  queueing:rate:{KEY}
-- ARGV[1]  limit (starts per window)
-- ARGV[2]  window length in microseconds
-- ARGV[3]  member naming this start (job uuid and delivery token)
-- Returns 0 when admitted, else the microseconds until the oldest start leaves the window.
if redis.replicate_commands then pcall(redis.replicate_commands) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local limit = tonumber(ARGV[1])
local span = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - span)
if redis.call('ZCARD', KEYS[1]) < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.ceil(span / 1000) + 1000)
  return 0
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local wait = tonumber(oldest[2]) + span - now
if wait < 1 then wait = 1 end
return wait
