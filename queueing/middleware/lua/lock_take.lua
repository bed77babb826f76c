-- lock_take: take an owned lock that expires by itself (unique jobs, WithoutOverlapping).
-- KEYS[1]  the lock                 queueing:unique:{JOB:ID} / queueing:overlap:{KEY}
-- KEYS[2]  optional: the index of held locks (zset key -> expiry ms), kept in the same
--          step on a single Redis; on a cluster the caller writes it (queueing/state/locks.py)
-- ARGV[1]  owner (who holds it: a job uuid, with the worker for overlap locks)
-- ARGV[2]  expiry in milliseconds (the lock goes away then even if its owner died)
-- ARGV[3]  now in unix milliseconds (the index's scores), with KEYS[2]
-- Returns {1, owner} when taken (or already held by this owner: its expiry is renewed),
-- {0, holder} when another owner holds it.
local function indexed()
  if KEYS[2] then
    redis.call('ZADD', KEYS[2], tonumber(ARGV[3]) + tonumber(ARGV[2]), KEYS[1])
  end
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  indexed()
  return {1, ARGV[1]}
end
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  indexed()
  return {1, holder}
end
return {0, holder or ''}
