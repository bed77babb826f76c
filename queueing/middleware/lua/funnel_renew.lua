-- funnel_renew: extend the leases of slots this process's running jobs hold.
-- KEYS[1]  the holders     queueing:funnel:{KEY}
-- ARGV[1]  the lease in milliseconds
-- ARGV[2]  milliseconds the key outlives its last use
-- ARGV[3..] owners whose slots are renewed (only those still held: XX)
-- Returns how many were still held.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[1])
local renewed = 0
for i = 3, #ARGV do
  renewed = renewed + redis.call('ZADD', KEYS[1], 'XX', 'CH', now + lease, ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], lease + tonumber(ARGV[2]))
return renewed
