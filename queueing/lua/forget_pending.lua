-- forget_pending: remove one ready job (and one notify token, to keep them in step).
-- KEYS[1]  ready list            queues:{NAME}
-- KEYS[2]  notify list           queues:{NAME}:notify
-- ARGV[1]  the payload, exactly as stored
-- Returns 1 if removed, 0 if it was no longer pending.
local removed = redis.call('LREM', KEYS[1], 1, ARGV[1])
if removed > 0 then redis.call('LPOP', KEYS[2]) end
return removed
