-- funnel_take: take one of a key's N slots (ConcurrencyLimited), or wait in line for one.
-- KEYS[1]  the holders     queueing:funnel:{KEY}          zset owner -> lease expiry (ms)
-- KEYS[2]  the waiting     queueing:funnel:{KEY}:waiting  zset waiter -> first parked (ms)
-- ARGV[1]  owner (the job's uuid and its worker)
-- ARGV[2]  the limit N
-- ARGV[3]  the lease in milliseconds (renewed while the job runs; a dead holder's lapses)
-- ARGV[4]  the waiter ("connection queue uuid"), put in line when no slot is free
-- ARGV[5]  milliseconds the keys outlive their last use (bounds what a gone job leaves)
-- Times are the Redis server's clock, so hosts with skewed clocks agree.
-- Returns {1, holders} when taken (or already held by this owner: its lease renewed),
-- {0, holders, ms} when the N slots are held: the waiter is in line (its first place
-- kept), and the first of the held leases lapses in `ms` unless renewed (a dead
-- holder's slot frees then with no release to wake anyone, so a parked job looks again).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[3])
local keep = tonumber(ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = redis.call('ZCARD', KEYS[1])
if redis.call('ZSCORE', KEYS[1], ARGV[1]) or held < tonumber(ARGV[2]) then
  if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then held = held + 1 end
  redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
  redis.call('PEXPIRE', KEYS[1], lease + keep)
  redis.call('ZREM', KEYS[2], ARGV[4])
  return {1, held}
end
redis.call('ZADD', KEYS[2], 'NX', now, ARGV[4])
redis.call('PEXPIRE', KEYS[2], keep)
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {0, held, math.max(tonumber(first[2]) - now, 0)}
