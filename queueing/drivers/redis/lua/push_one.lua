-- push_one: append one job to a queue's ready list, with its notify token and its
-- uuid index entry: push.lua's work for the one job of a `.delay()`, whose uuid the
-- caller knows and passes, so the script does not search the payload for it (that
-- pattern match was about a third of push.lua's time in Redis; issue 52).
-- KEYS[1]  ready list            queues:{NAME}
-- KEYS[2]  notify list           queues:{NAME}:notify
-- KEYS[3]  uuid index            queues:{NAME}:index   (zset uuid -> sequence)
-- KEYS[4]  its sequence          queues:{NAME}:seq
-- ARGV[1]  the encoded payload; ARGV[2] its top-level uuid (as push.lua would read it)
-- Returns the ready list's new length (as push.lua).
local length = redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('RPUSH', KEYS[2], '1')
redis.call('ZADD', KEYS[3], redis.call('INCRBY', KEYS[4], 1), ARGV[2])
return length
