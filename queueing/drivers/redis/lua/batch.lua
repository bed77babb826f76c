-- batch: every change to a batch's counters, and the dispatch of its callbacks, in one
-- atomic step (docs/batches.md).
-- KEYS[1]  the batch hash        queues:{Q}:batch:<id>
-- KEYS[2]  its members hash      queues:{Q}:batch:<id>:members   member -> state
-- KEYS[3]  ready list            queues:{Q}           (Q: the batch's callback queue,
-- KEYS[4]  notify list           queues:{Q}:notify     so every key is in one slot)
-- KEYS[5]  uuid index            queues:{Q}:index
-- KEYS[6]  its sequence          queues:{Q}:seq
-- KEYS[7]  its failed members    queues:{Q}:batch:<id>:failed   zset: job uuid -> when
--          (kept with the members hash, so a page lists the failed ones without
--          reading every member's state)
-- ARGV[1]  the operation: settle, start, retry, add, cancel
-- ARGV[2]  now (unix time, as text: it is written into callback payloads as is)
-- settle:  ARGV[3..] triples (member, outcome, job uuid); outcome s(ucceeded),
--          f(ailed) or c(ancelled: skipped because the batch was cancelled).
--          Returns how many members changed state (0: all counted already).
-- start:   ARGV[3..] pairs (member, job uuid): members a worker is about to start
--          (the one it starts now and those it prefetched with it). Returns a verdict
--          per pair, 1: run it; 0: the batch is cancelled, so the member was counted
--          as cancelled and must be dropped.
-- retry:   ARGV[3] member. A failed member becomes pending again ('r'). Returns 1/0.
-- add:     ARGV[3] how many members join. Returns the new total; -1 unknown batch,
--          -2 cancelled, -3 finished.
-- cancel:  Returns 1 when this call cancelled it, 0 if it was already, -1 unknown.
--
-- A member's state: absent (pending, never settled), 's', 'c', 'f:<job uuid>', 'r'
-- (failed, then retried: pending again, and it runs even in a cancelled batch). A
-- settlement that finds its member already settled changes nothing: the worker's
-- acknowledgement and its sidecar's may both send it, and the count stays exact.
local batch, members = KEYS[1], KEYS[2]
local op, now = ARGV[1], ARGV[2]
if redis.call('EXISTS', batch) == 0 then
  if op == 'start' then  -- pruned or unknown: each runs as a plain job
    local verdicts = {}
    for i = 3, #ARGV, 2 do verdicts[#verdicts + 1] = 1 end
    return verdicts
  end
  if op == 'add' or op == 'cancel' then return -1 end
  return 0
end

local function field(name)
  local value = redis.call('HGET', batch, name)
  if value == false then return '' end
  return value
end

-- A callback is a stored payload pushed like push.lua pushes: times made current.
local function push_callback(kind)
  local payload = field(kind)
  if payload == '' then return end
  local span = field(kind .. '_span')
  payload = string.gsub(payload, '"pushedAt":[^,}]+', '"pushedAt":' .. now, 1)
  payload = string.gsub(payload, '"availableAt":[^,}]+', '"availableAt":' .. now, 1)
  if span ~= '' then
    payload = string.gsub(payload, '"retryUntil":[^,}]+',
                          '"retryUntil":' .. tostring(tonumber(now) + tonumber(span)), 1)
  end
  redis.call('RPUSH', KEYS[3], payload)
  redis.call('RPUSH', KEYS[4], '1')
  local id = string.match(payload, '^{[^{}%[%]]-"uuid":"([^"\\]+)"')
  if id then redis.call('ZADD', KEYS[5], redis.call('INCR', KEYS[6]), id) end
end

local function settle(member, outcome, job)
  local prev = redis.call('HGET', members, member)
  if prev == 's' or prev == 'c' then return 0 end
  local was_failed = prev and string.sub(prev, 1, 1) == 'f'
  if outcome == 'f' then
    if was_failed then return 0 end
    redis.call('HINCRBY', batch, 'pending', -1)
    redis.call('HINCRBY', batch, 'failed', 1)
    redis.call('HSET', members, member, 'f:' .. job)
    redis.call('ZADD', KEYS[7], now, job)
    if field('first_failure') == '' then
      redis.call('HSET', batch, 'first_failure', job)
      if field('allow_failures') ~= '1' then
        if field('cancelled_at') == '' then redis.call('HSET', batch, 'cancelled_at', now) end
        if field('catch_at') == '' then
          redis.call('HSET', batch, 'catch_at', now)
          push_callback('catch')
        end
      end
    end
    return 1
  end
  if was_failed then  -- a failed member that succeeded after all (a duplicate run)
    redis.call('HINCRBY', batch, 'failed', -1)
    redis.call('ZREM', KEYS[7], string.sub(prev, 3))
  else
    redis.call('HINCRBY', batch, 'pending', -1)
  end
  redis.call('HINCRBY', batch, outcome == 's' and 'succeeded' or 'cancelled', 1)
  redis.call('HSET', members, member, outcome)
  return 1
end

-- After a change: the batch finished? Then its callbacks, each once for good.
local function maybe_finish()
  if tonumber(field('pending')) > 0 then return end
  if field('finished_at') == '' then redis.call('HSET', batch, 'finished_at', now) end
  if field('then_at') == '' and field('cancelled_at') == ''
     and field('succeeded') == field('total') then
    redis.call('HSET', batch, 'then_at', now)
    push_callback('then')
  end
  if field('finally_at') == '' then
    redis.call('HSET', batch, 'finally_at', now)
    push_callback('finally')
  end
end

if op == 'settle' then
  local changed = 0
  for i = 3, #ARGV, 3 do
    changed = changed + settle(ARGV[i], ARGV[i + 1], ARGV[i + 2])
  end
  if changed > 0 then maybe_finish() end
  return changed
elseif op == 'start' then
  local cancelled = field('cancelled_at') ~= ''
  local verdicts, changed = {}, 0
  for i = 3, #ARGV, 2 do
    local verdict = 1
    -- a member retried on purpose ('r') runs even in a cancelled batch
    if cancelled and redis.call('HGET', members, ARGV[i]) ~= 'r' then
      verdict = 0
      changed = changed + settle(ARGV[i], 'c', ARGV[i + 1])
    end
    verdicts[#verdicts + 1] = verdict
  end
  if changed > 0 then maybe_finish() end
  return verdicts
elseif op == 'retry' then
  local prev = redis.call('HGET', members, ARGV[3])
  if not prev or string.sub(prev, 1, 1) ~= 'f' then return 0 end
  redis.call('HSET', members, ARGV[3], 'r')
  redis.call('ZREM', KEYS[7], string.sub(prev, 3))
  redis.call('HINCRBY', batch, 'failed', -1)
  redis.call('HINCRBY', batch, 'pending', 1)
  redis.call('HSET', batch, 'finished_at', '')
  return 1
elseif op == 'add' then
  if field('cancelled_at') ~= '' then return -2 end
  if tonumber(field('pending')) <= 0 then return -3 end
  redis.call('HINCRBY', batch, 'pending', tonumber(ARGV[3]))
  return redis.call('HINCRBY', batch, 'total', tonumber(ARGV[3]))
elseif op == 'cancel' then
  if field('cancelled_at') ~= '' then return 0 end
  redis.call('HSET', batch, 'cancelled_at', now)
  return 1
end
return redis.error_reply('batch.lua: unknown operation ' .. tostring(op))
