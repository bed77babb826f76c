-- schedule_push: claim one slot of a schedule and push its job, atomically.
-- The slot key is SET NX with a TTL: the first master to run this for a slot pushes the
-- job; every other master (any host) gets 0 and pushes nothing. No leader election.
-- All keys share the queue's hash tag, so this stays in one Redis Cluster slot.
-- KEYS[1] ready list   queues:{NAME}          KEYS[2] notify list  queues:{NAME}:notify
-- KEYS[3] slot key     queues:{NAME}:schedule:<schedule>:<slot>
-- KEYS[4] run history  queues:{NAME}:schedule:<schedule>:runs (newest first)
-- ARGV[1] slot key TTL (seconds)   ARGV[2] encoded payload
-- ARGV[3] run record (JSON)        ARGV[4] history entries kept
-- KEYS[5] optional: uuid index queues:{NAME}:index   KEYS[6] its sequence queues:{NAME}:seq
-- Returns 1 when this call claimed the slot and pushed, 0 when it was already claimed.
if not redis.call('SET', KEYS[3], ARGV[3], 'NX', 'EX', ARGV[1]) then return 0 end
redis.call('RPUSH', KEYS[1], ARGV[2])
redis.call('RPUSH', KEYS[2], '1')
local id = KEYS[6] and string.match(ARGV[2], '^{[^{}%[%]]-"uuid":"([^"\\]+)"')
if id then redis.call('ZADD', KEYS[5], redis.call('INCR', KEYS[6]), id) end
redis.call('LPUSH', KEYS[4], ARGV[3])
redis.call('LTRIM', KEYS[4], 0, tonumber(ARGV[4]) - 1)
return 1
