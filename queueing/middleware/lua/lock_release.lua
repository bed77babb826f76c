-- lock_release: drop a lock only if its owner is still the one named (compare and delete),
-- so a lock that expired and was taken by another job is never released by the first.
-- KEYS[1]  the lock
-- ARGV[1]  the owner that may release it
-- Returns 1 if released, 0 if the lock was gone or held by another owner.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
