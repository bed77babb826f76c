-- uuid_prefix: the dashboard's search by a uuid prefix (8+ characters, the form logs
-- show), over a bounded part of the uuid indexes push/later/pop/release keep.
-- KEYS[1]  uuid index            queues:{NAME}:index      (uuid -> sequence: next to run first)
-- KEYS[2]  delayed uuid index    queues:{NAME}:due-index  (uuid -> due time: soonest first)
-- ARGV[1]  the prefix
-- ARGV[2]  how many uuids of each index to read at most, from its head
-- ARGV[3]  how many matches to return at most
-- Returns the matching uuids. O(log N + ARGV[2]) per index whatever its size: a ZSCAN
-- MATCH over a whole index cost 3.4 s of Redis at 1,000,000 jobs, on every refresh.
local prefix, read, limit = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local width = string.len(prefix)
local found = {}
for _, key in ipairs(KEYS) do
  for _, member in ipairs(redis.call('ZRANGE', key, 0, read - 1)) do
    if string.sub(member, 1, width) == prefix then
      found[#found + 1] = member
      if #found >= limit then return found end
    end
  end
end
return found
