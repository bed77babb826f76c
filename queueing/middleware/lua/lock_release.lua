-- lock_release: drop a lock only if its owner is still the one named (compare and delete),
-- so a lock that expired and was taken by another job is never released by the first.
-- KEYS[1]  the lock
-- KEYS[2]  optional: the index of held locks (see lock_take.lua)
-- ARGV[1]  the owner that may release it
-- Returns 1 if released, 0 if the lock was gone or held by another owner.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  if KEYS[2] then
    redis.call('ZREM', KEYS[2], KEYS[1])
  end
  return redis.call('DEL', KEYS[1])
end
return 0
