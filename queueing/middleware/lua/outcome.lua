-- outcome: count one thing middleware did to a job, for its dashboard page.
-- KEYS[1]  hash of outcome -> count, plus 'last' and 'last_at'   queueing:outcomes:{UUID}
-- ARGV[1]  the outcome ("released by RateLimited('emails')", "skipped by Skip")
-- ARGV[2]  unix time
-- ARGV[3]  seconds the record is kept after its last change
redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
redis.call('HSET', KEYS[1], 'last', ARGV[1], 'last_at', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
