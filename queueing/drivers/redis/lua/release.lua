-- release: hand a reserved job back for a later attempt (the attempts count carries over).
-- Nothing is added when the reservation is gone (it expired and was handed out again),
-- so a late release never duplicates a job.
-- KEYS[1]  delayed zset          queues:{NAME}:delayed
-- KEYS[2]  reserved zset         queues:{NAME}:reserved
-- ARGV[1]  the reserved payload, exactly as pop returned it
-- ARGV[2]  when it becomes available again (unix time)
-- ARGV[3]  optional: the payload to store instead (the worker's normalised re-encoding,
--          e.g. a wrapped entry unwrapped, or a failure waiting to be recorded)
-- KEYS[3]  optional: delayed uuid index  queues:{NAME}:due-index
-- Returns 1 if released, 0 if the reservation was not held.
if redis.call('ZREM', KEYS[2], ARGV[1]) == 1 then
  local payload = ARGV[1]
  if ARGV[3] and #ARGV[3] > 0 then payload = ARGV[3] end
  redis.call('ZADD', KEYS[1], ARGV[2], payload)
  if KEYS[3] then
    local function uuid_of(entry)  -- the top-level "uuid" (before any nested object), or nil
      return string.match(entry, '^{[^{}%[%]]-"uuid":"([^"\\]+)"')
    end
    local id = uuid_of(payload)
    if id then redis.call('ZADD', KEYS[3], ARGV[2], id) end
  end
  return 1
end
return 0
