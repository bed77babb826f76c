-- push_priority: add a job with a non-zero Django Tasks priority to its queue.
-- Priority-0 jobs never come here: they go to the ready list with push, as every @job does.
-- Jobs above 0 wait in the :prio:hi set, below 0 in :prio:lo; pop takes from :prio:hi
-- before the ready list and from :prio:lo after it. The score orders a set by priority
-- (higher first) and then by a per-queue sequence number (FIFO within one priority):
--   score = (100 - priority) * 2^44 + sequence
-- an integer below 2^53, so exact in a double.
-- KEYS[1]  the priority set      queues:{NAME}:prio:hi or queues:{NAME}:prio:lo
-- KEYS[2]  sequence counter      queues:{NAME}:prio:seq
-- KEYS[3]  notify list           queues:{NAME}:notify
-- ARGV[1]  priority (-100..100, not 0)
-- ARGV[2]  encoded payload
-- Returns the job's score.
local priority = tonumber(ARGV[1])
local sequence = redis.call('INCR', KEYS[2])
local score = (100 - priority) * 17592186044416 + sequence
redis.call('ZADD', KEYS[1], score, ARGV[2])
redis.call('RPUSH', KEYS[3], '1')
return tostring(score)
