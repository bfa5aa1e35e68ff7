/**
 * The Lua scripts of provider budgets (provider-budgets.ts). Every key of one profile shares its
 * hash tag (budget-keys.ts), so each script touches one slot of a Redis Cluster. Times come from
 * the Redis server's clock, so workers with skewed clocks agree.
 *
 * A window is a hash of slice counters, fields `<slice>:r` (requests), `<slice>:i` (input
 * tokens), `<slice>:o` (output tokens), a slice being `sliceMs` long. The window counts every
 * slice that overlaps the last `windowMs`, so it never holds less than what the provider saw in
 * any `windowMs` ending now (at most one slice more); fields older than that are deleted as they
 * are met. Requests in flight are sorted sets of lease ids scored with when they lapse.
 */

/** What the scripts share: the clock, the window sums, and the wait until a window lets a request in. */
const common = `
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

local function windowOf(key, sliceMs, slices)
  local current = math.floor(now / sliceMs)
  local first = current - slices
  local totals = { r = 0, i = 0, o = 0 }
  local bySlice = {}
  local fields = redis.call('HGETALL', key)
  for k = 1, #fields, 2 do
    local name = fields[k]
    local sep = string.find(name, ':', 1, true)
    local slice = tonumber(string.sub(name, 1, sep - 1))
    local dim = string.sub(name, sep + 1)
    if slice < first then
      redis.call('HDEL', key, name)
    else
      local value = tonumber(fields[k + 1])
      totals[dim] = totals[dim] + value
      bySlice[slice] = bySlice[slice] or { r = 0, i = 0, o = 0 }
      bySlice[slice][dim] = bySlice[slice][dim] + value
    end
  end
  return { totals = totals, bySlice = bySlice, first = first, current = current }
end

-- Milliseconds until what stays of the window (oldest slices leave first) passes fits(rest).
local function untilFits(window, dim, sliceMs, slices, fits)
  local rest = window.totals[dim]
  for slice = window.first, window.current do
    local counted = window.bySlice[slice]
    if counted then rest = rest - counted[dim] end
    if fits(rest) then return (slice + slices + 1) * sliceMs - now end
  end
  return (slices + 1) * sliceMs
end

local function inflightOf(key)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  return redis.call('ZCARD', key)
end
`;

/**
 * acquire
 * KEYS: window, inflight, pause, waiting, weights, tenant window, tenant inflight, stats.
 * ARGV: sliceMs, slices, limit of requests, input tokens, output tokens, concurrent (0: none),
 * request characters, tenant, weight, waiter, lease id, lease ttl ms, poll ms, grace ms, key ttl ms.
 * Answers {1, slice, input tokens, output tokens} for a grant, {0, ms, reason} for a wait; a
 * wait registers the waiter, so other tenants leave it its fair share, until ms + grace from now.
 */
export const acquireScript = `${common}
local sliceMs, slices = tonumber(ARGV[1]), tonumber(ARGV[2])
local limits = { r = tonumber(ARGV[3]), i = tonumber(ARGV[4]), o = tonumber(ARGV[5]) }
local concurrent = tonumber(ARGV[6])
local tenant, weight, member = ARGV[8], tonumber(ARGV[9]), ARGV[8] .. '|' .. ARGV[10]
local pollMs, graceMs, keyTtl = tonumber(ARGV[13]), tonumber(ARGV[14]), tonumber(ARGV[15])
local names = { r = 'requests', i = 'input_tokens', o = 'output_tokens' }

local function wait(ms, reason)
  ms = math.max(1, math.ceil(ms))
  redis.call('ZADD', KEYS[4], now + ms + graceMs, member)
  redis.call('HSET', KEYS[5], tenant, weight)
  redis.call('PEXPIRE', KEYS[4], keyTtl)
  redis.call('PEXPIRE', KEYS[5], keyTtl)
  return { 0, ms, reason }
end

local pausedUntil = tonumber(redis.call('GET', KEYS[3]) or '0')
if pausedUntil > now then return wait(pausedUntil - now, 'paused') end

local stats = redis.call('HMGET', KEYS[8], 'ratio', 'output')
local cost = { r = 1, i = math.ceil(tonumber(ARGV[7]) * (tonumber(stats[1]) or 0.25)), o = math.floor(tonumber(stats[2]) or 0) }
local window = windowOf(KEYS[1], sliceMs, slices)
local inflight = inflightOf(KEYS[2])
local longest, reason = 0, nil
for dim, limit in pairs(limits) do
  local used = window.totals[dim]
  if limit > 0 and used > 0 and used + cost[dim] > limit then
    local ms = untilFits(window, dim, sliceMs, slices, function(rest) return rest <= 0 or rest + cost[dim] <= limit end)
    if ms > longest then longest, reason = ms, names[dim] end
  end
end
if concurrent > 0 and inflight >= concurrent and pollMs > longest then longest, reason = pollMs, 'concurrency' end
if reason then return wait(longest, reason) end

redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
local others, seen = 0, {}
for _, waiting in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
  local who = string.sub(waiting, 1, string.find(waiting, '|', 1, true) - 1)
  if who ~= tenant and not seen[who] then
    seen[who] = true
    others = others + (tonumber(redis.call('HGET', KEYS[5], who)) or 1)
  end
end
if others > 0 then
  local mine = windowOf(KEYS[6], sliceMs, slices)
  local mineInflight = inflightOf(KEYS[7])
  local part = weight / (weight + others)
  for dim, limit in pairs(limits) do
    local share = limit * part
    if limit > 0 and mine.totals[dim] >= share then
      local ms = untilFits(mine, dim, sliceMs, slices, function(rest) return rest < share end)
      if ms > longest then longest, reason = ms, 'fair_share' end
    end
  end
  if concurrent > 0 and mineInflight >= concurrent * part and pollMs > longest then longest, reason = pollMs, 'fair_share' end
  if reason then return wait(longest, reason) end
end

local expires = now + tonumber(ARGV[12])
for _, key in ipairs({ KEYS[1], KEYS[6] }) do
  redis.call('HINCRBY', key, window.current .. ':r', 1)
  redis.call('HINCRBY', key, window.current .. ':i', cost.i)
  redis.call('HINCRBY', key, window.current .. ':o', cost.o)
  redis.call('PEXPIRE', key, keyTtl)
end
for _, key in ipairs({ KEYS[2], KEYS[7] }) do
  redis.call('ZADD', key, expires, ARGV[11])
  redis.call('PEXPIRE', key, math.max(keyTtl, tonumber(ARGV[12])))
end
redis.call('ZREM', KEYS[4], member)
return { 1, window.current, cost.i, cost.o }`;

/**
 * settle
 * KEYS: window, inflight, tenant window, tenant inflight, stats.
 * ARGV: lease id, slice, estimated input, reserved output, reported input and output (-1: none),
 * request characters, stats ttl ms. Corrects the slice the call was counted in, if the window
 * still holds it, and teaches the profile its tokens per character and its average output.
 */
export const settleScript = `
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
local input, output = tonumber(ARGV[5]), tonumber(ARGV[6])
if input < 0 then return 0 end
for _, key in ipairs({ KEYS[1], KEYS[3] }) do
  if redis.call('HEXISTS', key, ARGV[2] .. ':r') == 1 then
    redis.call('HINCRBY', key, ARGV[2] .. ':i', input - tonumber(ARGV[3]))
    redis.call('HINCRBY', key, ARGV[2] .. ':o', output - tonumber(ARGV[4]))
  end
end
local stats = redis.call('HMGET', KEYS[5], 'ratio', 'output')
local chars = tonumber(ARGV[7])
if chars > 0 and input > 0 then
  local seen = math.min(4, math.max(0.01, input / chars))
  local ratio = tonumber(stats[1])
  redis.call('HSET', KEYS[5], 'ratio', tostring(ratio and (0.8 * ratio + 0.2 * seen) or seen))
end
local average = tonumber(stats[2])
redis.call('HSET', KEYS[5], 'output', tostring(average and (0.8 * average + 0.2 * output) or output))
redis.call('PEXPIRE', KEYS[5], ARGV[8])
return 1`;

/**
 * pause
 * KEYS: pause. ARGV: ms. Sets the pause to now + ms unless a later one is set; answers the end.
 */
export const pauseScript = `
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local ends = now + tonumber(ARGV[1])
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current >= ends then return current end
redis.call('SET', KEYS[1], ends, 'PX', ARGV[1])
return ends`;

/**
 * state
 * KEYS: window, inflight, pause, tenant window (or the window again), tenant inflight (or the inflight again).
 * ARGV: sliceMs, slices. Answers the window's sums and requests in flight, the tenant's, and the pause left.
 */
export const stateScript = `${common}
local sliceMs, slices = tonumber(ARGV[1]), tonumber(ARGV[2])
local window = windowOf(KEYS[1], sliceMs, slices)
local mine = windowOf(KEYS[4], sliceMs, slices)
local pausedUntil = tonumber(redis.call('GET', KEYS[3]) or '0')
return { window.totals.r, window.totals.i, window.totals.o, inflightOf(KEYS[2]),
  mine.totals.r, mine.totals.i, mine.totals.o, inflightOf(KEYS[5]), math.max(0, pausedUntil - now) }`;
