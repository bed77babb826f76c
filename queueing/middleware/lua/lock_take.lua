-- lock_take: take an owned lock that expires by itself (unique jobs, WithoutOverlapping).
-- KEYS[1]  the lock                 queueing:unique:{JOB:ID} / queueing:overlap:{KEY}
-- ARGV[1]  owner (who holds it: a job uuid, with the worker for overlap locks)
-- ARGV[2]  expiry in milliseconds (the lock goes away then even if its owner died)
-- Returns {1, owner} when taken (or already held by this owner: its expiry is renewed),
-- {0, holder} when another owner holds it.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1, ARGV[1]}
end
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, holder}
end
return {0, holder or ''}
