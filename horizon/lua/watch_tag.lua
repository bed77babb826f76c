-- watch_tag: start watching a tag, unless MAX_WATCHED tags are watched already
-- (horizon/repositories/monitored.py). One script, so two operators adding the last
-- free place at once cannot both get it.
-- KEYS[1]  the watched tags   {horizon}:monitoring (set)
-- ARGV[1]  the tag
-- ARGV[2]  the cap
-- Returns 1 (now watched), 0 (was watched already) or -1 (refused: the cap is reached).
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return 0 end
if redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[2]) then return -1 end
return redis.call('SADD', KEYS[1], ARGV[1])
