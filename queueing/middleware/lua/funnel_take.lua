-- funnel_take: take one of a key's N slots (ConcurrencyLimited), or wait in line for one.
-- KEYS[1]  the holders     queueing:funnel:{KEY}          zset owner -> lease expiry (ms)
-- KEYS[2]  the waiting     queueing:funnel:{KEY}:waiting  zset waiter -> first parked (ms)
-- KEYS[3]  where each holder's job is  queueing:funnel:{KEY}:where  hash owner ->
--          '[connection, queue, reservation]' (optional: without it lapsed holders are
--          evicted at once)
-- ARGV[1]  owner (the job's uuid and its worker)
-- ARGV[2]  the limit N
-- ARGV[3]  the lease in milliseconds (renewed while the job runs; a dead holder's lapses)
-- ARGV[4]  the waiter ("connection queue uuid"), put in line when no slot is free
-- ARGV[5]  milliseconds the keys outlive their last use (bounds what a gone job leaves)
-- ARGV[6]  '1': evict lapsed holders (the caller checked them: funnel_slots.take);
--          '0': a lapsed holder that would free the slot this owner needs is not
--          evicted but returned for checking (its job may still run: a job holding the
--          GIL stops its worker's renewing thread, while its sidecar keeps its
--          reservation leased)
-- ARGV[7]  this owner's '[connection, queue, reservation]', kept in KEYS[3]
-- Times are the Redis server's clock, so hosts with skewed clocks agree.
-- Returns {1, holders} when taken (or already held by this owner: its lease renewed),
-- {0, holders, ms} when the N slots are held: the waiter is in line (its first place
-- kept), and the first of the held leases lapses in `ms` unless renewed (a dead
-- holder's slot frees then with no release to wake anyone, so a parked job looks again),
-- {2, holders, owner, where, ...} when the slot needs a lapsed holder gone: the lapsed
-- holders and where their jobs are, to check (then call again with ARGV[6] '1').
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[3])
local keep = tonumber(ARGV[5])
local limit = tonumber(ARGV[2])
local tracked = #KEYS >= 3
local mine = redis.call('ZSCORE', KEYS[1], ARGV[1])
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
if #lapsed > 0 and (not tracked or ARGV[6] == '1') then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  if tracked then redis.call('HDEL', KEYS[3], unpack(lapsed)) end
  lapsed = {}
end
local held = redis.call('ZCARD', KEYS[1])
if mine or held < limit then
  if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then held = held + 1 end
  redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
  redis.call('PEXPIRE', KEYS[1], lease + keep)
  if tracked then
    redis.call('HSET', KEYS[3], ARGV[1], ARGV[7])
    redis.call('PEXPIRE', KEYS[3], lease + keep)
  end
  redis.call('ZREM', KEYS[2], ARGV[4])
  return {1, held}
end
if #lapsed > 0 and held - #lapsed < limit then
  local reply = {2, held}
  for i = 1, #lapsed do
    reply[#reply + 1] = lapsed[i]
    reply[#reply + 1] = redis.call('HGET', KEYS[3], lapsed[i]) or ''
  end
  return reply
end
redis.call('ZADD', KEYS[2], 'NX', now, ARGV[4])
redis.call('PEXPIRE', KEYS[2], keep)
local first = redis.call('ZRANGEBYSCORE', KEYS[1], now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
if #first == 0 then first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES') end
return {0, held, math.max(tonumber(first[2]) - now, 0)}
