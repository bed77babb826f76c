-- result_final: a job's final outcome, and its wake-up, at once (queueing/results).
-- KEYS[1]  the result's hash                          queueing:result:{UUID}
-- KEYS[2]  its ready list, also the channel published  queueing:result:{UUID}:ready
-- KEYS[3..] companion lists, expired with the record  queueing:result:{UUID}:workers...
-- ARGV[1]  seconds the record is kept (keep_result)
-- ARGV[2]  seconds the ready list is kept (longer: the result then reads as expired)
-- ARGV[3..] field, value, field, value... of the outcome
local fields = {}
for i = 3, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('EXPIRE', KEYS[1], ARGV[1])
for i = 3, #KEYS do redis.call('EXPIRE', KEYS[i], ARGV[1]) end
redis.call('RPUSH', KEYS[2], '1')
redis.call('EXPIRE', KEYS[2], ARGV[2])
redis.call('PUBLISH', KEYS[2], '1')
return 1
