-- record_attempt: append one attempt to a job's timeline, keeping the timeline small.
-- Only the newest entry keeps its full error (message and traceback): the entry before
-- it is cut to its one-line summary as this one lands, so a job that was released nine
-- times holds one traceback, not nine. The list is capped, expires at its owner's
-- deadline, and is indexed by that deadline so the master can trim by age and count.
-- KEYS[1] the job's attempts list     KEYS[2] the attempts index (zset: uuid -> deadline)
-- ARGV[1] the entry (JSON)  ARGV[2] entries kept  ARGV[3] deadline (unix seconds)
-- ARGV[4] the job's uuid
local last = redis.call('LINDEX', KEYS[1], -1)
if last then
  local ok, entry = pcall(cjson.decode, last)
  if ok and type(entry) == 'table' and entry.error ~= nil and entry.summary ~= nil then
    entry.error = nil
    redis.call('LSET', KEYS[1], -1, cjson.encode(entry))
  end
end
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[2]), -1)
redis.call('EXPIREAT', KEYS[1], math.ceil(tonumber(ARGV[3])))
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
return 1
