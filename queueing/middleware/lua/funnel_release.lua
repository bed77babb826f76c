-- funnel_release: give a slot back (its owner only) and take out of line the waiters
-- that may start now, one per free slot; the caller makes each one ready (a parked job
-- sits in its queue's delayed set) so it starts at once, with no polling.
-- Also called with an owner that holds nothing ('') after a job was parked, so a slot
-- freed while it was being parked is not left idle (nothing is lost either way).
-- KEYS[1]  the holders     queueing:funnel:{KEY}
-- KEYS[2]  the waiting     queueing:funnel:{KEY}:waiting
-- KEYS[3]  where holders' jobs are (optional). With it, a lapsed holder is not evicted
--          here: it still counts as held until funnel_take has checked that its job
--          is gone (a job holding the GIL cannot renew its slot, and still runs).
-- ARGV[1]  owner whose slot goes ('' for none)
-- ARGV[2]  the limit N
-- Returns {released (0/1), waiter, score, waiter, score, ...}: the waiters taken out of
-- line, oldest first, with their first-parked times (to put one back in its place).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local released = 0
if ARGV[1] ~= '' then
  released = redis.call('ZREM', KEYS[1], ARGV[1])
  if #KEYS >= 3 then redis.call('HDEL', KEYS[3], ARGV[1]) end
end
if #KEYS < 3 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
end
local free = tonumber(ARGV[2]) - redis.call('ZCARD', KEYS[1])
local reply = {released}
if free > 0 then
  local woken = redis.call('ZPOPMIN', KEYS[2], free)
  for i = 1, #woken do reply[#reply + 1] = woken[i] end
end
return reply
