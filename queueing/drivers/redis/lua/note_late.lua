-- note_late: remember the uuids of a dispatch that Redis ran late (issue 47). A failover
-- connection's dispatch gives up on Redis after dispatch_timeout and writes the job to
-- its next connection; a Redis that was only stalled then runs the push it had read
-- before the stall, and the job exists twice. Sent in the same round trip right after
-- the push (so it runs right after it, or not at all), this notes such a push, and
-- the drain deletes the other copy instead of moving it back (queueing/failover/drain.py).
-- KEYS[1]  late zset             queues:{NAME}:late   (uuid -> when noted, Redis time)
-- ARGV[1]  when the dispatcher sent it (unix seconds, its clock)
-- ARGV[2]  seconds after which the push counts as late (well under dispatch_timeout:
--          the hosts' clocks may differ by that much less than it)
-- ARGV[3]  seconds a note is kept (older ones are trimmed here)
-- ARGV[4..] the uuids
-- Returns how many were noted (0: on time, nothing written).
if redis.replicate_commands then pcall(redis.replicate_commands) end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
if now - tonumber(ARGV[1]) <= tonumber(ARGV[2]) then return 0 end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[3]))
for i = 4, #ARGV do redis.call('ZADD', KEYS[1], now, ARGV[i]) end
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[3])))
return #ARGV - 3
