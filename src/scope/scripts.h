/* SPDX-License-Identifier: MIT */
/*
 * The Lua scripts that change a scope in Redis.
 *
 * Why scripts, not MULTI/EXEC: a reservation is a read (spent, reserved)
 * followed by a write that depends on it. MULTI/EXEC cannot branch on what
 * it reads; it needs WATCH and a retry loop, and with every host of an
 * organisation reserving from one budget the WATCHed key changes under
 * nearly every transaction, so hosts retry without bound and each retry is
 * another round trip. A script runs atomically in Redis (nothing else runs
 * meanwhile), decides there, and costs one round trip whatever the load.
 *
 * Amounts are integer micro-USD passed as decimal strings and changed with
 * HINCRBY only (never by "-0", which HINCRBY refuses as not an integer): Lua numbers are doubles, exact for integers below 2^53 (the
 * policy keeps budgets below that), but Redis turns a Lua number argument
 * into a string with "%.14g", which would round; so no number computed in
 * Lua is ever passed to redis.call as an amount, only the strings given.
 *
 * Keys of a scope share the hash tag {...} of its prefix, so that a cluster
 * keeps them in one slot, which a multi-key script needs.
 */
#ifndef SHACKLE_SCOPE_SCRIPTS_H
#define SHACKLE_SCOPE_SCRIPTS_H

/* Charge reservations whose lease ran out (a host that died between
 * reserving and settling): at their estimate, since the call may well have
 * run; then the same reservation as SCOPE_LUA_RESERVE. At most
 * SCOPE_SWEEP_MAX per call, each returned with its amount, so that the
 * entry that records the answer stays small; the others stay reserved
 * (counted against the limit) until a later call sweeps them. */
#define SCOPE_SWEEP_MAX 4 /* SHK_SCOPE_SWEPT_MAX */
#define SCOPE_STR_(x) #x
#define SCOPE_STR(x) SCOPE_STR_(x)
#define SCOPE_LUA_SWEEP                                                              \
	"local t = redis.call('TIME')\n"                                             \
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"    \
	"local old = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, " SCOPE_STR(SCOPE_SWEEP_MAX) ")\n" \
	"local swept = {}\n"                                                         \
	"for _, o in ipairs(old) do\n"                                               \
	"  local a = redis.call('HGET', KEYS[2], o)\n"                               \
	"  if a then\n"                                                              \
	"    redis.call('HINCRBY', KEYS[1], 'spent', a)\n"                           \
	"    if a ~= '0' then redis.call('HINCRBY', KEYS[1], 'reserved', '-' .. a) end\n" \
	"    redis.call('HDEL', KEYS[2], o)\n"                                       \
	"    swept[#swept + 1] = o\n"                                                \
	"    swept[#swept + 1] = a\n"                                                \
	"  end\n"                                                                    \
	"  redis.call('ZREM', KEYS[3], o)\n"                                         \
	"end\n"

/* The budget hash's `ops` counts the operations that moved the scope's
 * spent or reserved, one per script call that did (a sweep and the
 * reservation after it are one): every answer carries it, so that the
 * audit logs of all hosts can be put back in Redis' order and each total
 * checked against the one before it (docs/audit.md, "Shared scopes"). */
#define SCOPE_LUA_OPS(moved)                                                         \
	"local ops = tonumber(redis.call('HGET', KEYS[1], 'ops') or '0')\n"         \
	"if " moved " then ops = redis.call('HINCRBY', KEYS[1], 'ops', 1) end\n"

/* KEYS: budget hash, reservations hash, lease zset.
 * ARGV: field (session:nonce), estimate, limit (uUSD), lease (ms).
 * Returns {1 granted | 0 refused | -1 field exists, spent, reserved, ops,
 * field1, amount1, ...} with spent and reserved as they were before this
 * reservation (after the sweep), ops after it, and the reservations the
 * sweep charged. A field that exists changes nothing. */
#define SCOPE_LUA_RESERVE                                                           \
	"if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then\n"                     \
	"  return {-1, 0, 0, 0}\n"                                                   \
	"end\n"                                                                      \
	SCOPE_LUA_SWEEP                                                             \
	"local spent = tonumber(redis.call('HGET', KEYS[1], 'spent') or '0')\n"     \
	"local resv = tonumber(redis.call('HGET', KEYS[1], 'reserved') or '0')\n"   \
	"if spent == nil or resv == nil then return redis.error_reply('shackle: budget is not numbers') end\n" \
	"local ok = spent + resv + tonumber(ARGV[2]) <= tonumber(ARGV[3])\n"          \
	"if ok then\n"                                                               \
	"  redis.call('HINCRBY', KEYS[1], 'reserved', ARGV[2])\n"                    \
	"  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])\n"                          \
	"  redis.call('ZADD', KEYS[3], string.format('%d', now + tonumber(ARGV[4])), ARGV[1])\n" \
	"end\n"                                                                      \
	SCOPE_LUA_OPS("ok or #swept > 0")                                           \
	"local ret = {ok and 1 or 0, spent, resv, ops}\n"                            \
	"for _, x in ipairs(swept) do ret[#ret + 1] = x end\n"                       \
	"return ret\n"

/* KEYS: as RESERVE. ARGV: field, actual (uUSD; "0" releases).
 * Returns {1 found | 0 not found, spent, reserved, ops} after the change. */
#define SCOPE_LUA_SETTLE                                                            \
	"local a = redis.call('HGET', KEYS[2], ARGV[1])\n"                           \
	"if not a then\n"                                                            \
	"  return {0, tonumber(redis.call('HGET', KEYS[1], 'spent') or '0'),\n"      \
	"          tonumber(redis.call('HGET', KEYS[1], 'reserved') or '0'),\n"      \
	"          tonumber(redis.call('HGET', KEYS[1], 'ops') or '0')}\n"           \
	"end\n"                                                                      \
	"local resv = a == '0' and tonumber(redis.call('HGET', KEYS[1], 'reserved') or '0')\n" \
	"  or redis.call('HINCRBY', KEYS[1], 'reserved', '-' .. a)\n"               \
	"local spent = redis.call('HINCRBY', KEYS[1], 'spent', ARGV[2])\n"           \
	"redis.call('HDEL', KEYS[2], ARGV[1])\n"                                     \
	"redis.call('ZREM', KEYS[3], ARGV[1])\n"                                     \
	SCOPE_LUA_OPS("true")                                                       \
	"return {1, spent, resv, ops}\n"

/* KEYS: breaker hash. ARGV: "trip" | "reset", by, reason, channel.
 * A trip of an open breaker changes nothing (the first trip wins).
 * Returns {changed, epoch, open, at_ms, by, reason}; a change is published
 * on the channel as "epoch\nopen\nat_ms\nby\nreason". */
#define SCOPE_LUA_BREAKER                                                           \
	"local cur = redis.call('HMGET', KEYS[1], 'epoch', 'open', 'at', 'by', 'reason')\n" \
	"local open = ARGV[1] == 'trip' and '1' or '0'\n"                            \
	"if ARGV[1] == 'trip' and cur[2] == '1' then\n"                              \
	"  return {0, tonumber(cur[1] or '0'), 1, tonumber(cur[3] or '0'), cur[4] or '', cur[5] or ''}\n" \
	"end\n"                                                                      \
	"local t = redis.call('TIME')\n"                                             \
	"local at = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))\n" \
	"local epoch = redis.call('HINCRBY', KEYS[1], 'epoch', 1)\n"                 \
	"local reason = open == '1' and ARGV[3] or ''\n"                             \
	"redis.call('HSET', KEYS[1], 'open', open, 'at', at, 'by', ARGV[2], 'reason', reason)\n" \
	"redis.call('PUBLISH', ARGV[4], epoch .. '\\n' .. open .. '\\n' .. at .. '\\n' .. ARGV[2] .. '\\n' .. reason)\n" \
	"return {1, epoch, tonumber(open), tonumber(at), ARGV[2], reason}\n"

#endif
