/**
 * The Lua scripts behind the Redis office registry. Every mutation of membership is one script,
 * so the rules of D5 (one Agent per office, unique Computer names, a Computer moves between
 * offices) are checked and applied atomically across all Server nodes: Redis runs a script
 * without interleaving any other command.
 *
 * Key layout under the prefix `P` (default `a2c`):
 * - `P:m:<sid>`            hash   one member: sid, name, role, office, ver, node
 * - `P:o:<office>:agent`   string sid of the office's Agent
 * - `P:o:<office>:comp`    hash   Computer name → sid
 * - `P:o:<office>:order`   zset   sid → join sequence (list order)
 * - `P:offices`            set    office ids with at least one member
 * - `P:stats`              hash   agents, computers (for metrics)
 * - `P:seq`                counter of joins (join order)
 * - `P:nodes`              set    registered node ids
 * - `P:n:<node>:alive`     string heartbeat, expires after the node's TTL
 * - `P:n:<node>:members`   set    sids joined through that node
 * - channel `P:node:<node>` subscribed by the node's adapter connection while it lives
 *
 * A node is alive while BOTH its heartbeat key exists and its liveness channel has a subscriber.
 * The channel catches a crashed process at once (Redis drops a dead TCP peer's subscriptions);
 * the key catches a hung or partitioned node within its TTL.
 *
 * Scripts build keys from the prefix instead of declaring them: this targets one Redis (or one
 * primary). For Redis Cluster, a prefix with a hash tag (`{a2c}`) keeps every key in one slot.
 */
import { createHash } from "node:crypto";

/** Shared Lua helpers, prepended to every script. `ARGV[1]` is always the key prefix. */
const PRELUDE = `
local P = ARGV[1]
local function mkey(sid) return P .. ':m:' .. sid end
local function okey(office, part) return P .. ':o:' .. office .. ':' .. part end
local function nkey(node, part) return P .. ':n:' .. node .. ':' .. part end
local FIELDS = {'sid', 'name', 'role', 'office', 'ver', 'node'}
local function load(sid)
  local h = redis.call('HMGET', mkey(sid), unpack(FIELDS))
  if not h[1] then return nil end
  return h
end
local function subscribed(node)
  local sub = redis.call('PUBSUB', 'NUMSUB', P .. ':node:' .. node)
  return tonumber(sub[2]) > 0
end
local function alive(node)
  if redis.call('EXISTS', nkey(node, 'alive')) == 0 then return false end
  return subscribed(node)
end
local function detach(m)
  local sid, name, role, office, node = m[1], m[2], m[3], m[4], m[6]
  redis.call('DEL', mkey(sid))
  redis.call('SREM', nkey(node, 'members'), sid)
  if role == 'agent' then
    if redis.call('GET', okey(office, 'agent')) == sid then
      redis.call('DEL', okey(office, 'agent'))
      redis.call('HINCRBY', P .. ':stats', 'agents', -1)
    end
  elseif redis.call('HGET', okey(office, 'comp'), name) == sid then
    redis.call('HDEL', okey(office, 'comp'), name)
    redis.call('HINCRBY', P .. ':stats', 'computers', -1)
  end
  redis.call('ZREM', okey(office, 'order'), sid)
  if redis.call('ZCARD', okey(office, 'order')) == 0 then
    redis.call('SREM', P .. ':offices', office)
  end
  return m
end
`;

/**
 * join: ARGV = P, sid, name, role, office, ver, node.
 * Replies: {'ok', <previous member fields or nothing>} | {'unchanged', <member fields>} |
 * {'refused', token, text} | {'held', token, text, <holder fields>} (the seat is held by a
 * member of a live node: the caller may check that the holder's socket still exists) |
 * {'stale', node} (the holder's node is dead: reap it, then retry) | {'fenced'} (the joining
 * node itself is not registered). Tokens: docs/protocol.md §3.5 (D55).
 */
const JOIN = `
local sid, name, role, office, ver, node = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
if redis.call('EXISTS', nkey(node, 'alive')) == 0 then return {'fenced'} end
local cur = load(sid)
if cur then
  if cur[4] == office then
    if cur[2] == name and cur[3] == role then return {'unchanged', unpack(cur)} end
    return {'refused', 'already_joined', "Already in office '" .. office .. "' as '" .. cur[2] .. "', leave it first"}
  end
  if cur[3] == 'agent' then
    return {'refused', 'agent_elsewhere', "Agent is already in office '" .. cur[4] .. "', leave it before joining another"}
  end
end
local holder
if role == 'agent' then
  holder = redis.call('GET', okey(office, 'agent'))
else
  holder = redis.call('HGET', okey(office, 'comp'), name)
end
if holder then
  local h = load(holder)
  if h then
    if not alive(h[6]) then return {'stale', h[6]} end
    if role == 'agent' then return {'held', 'agent_present', 'Room already has an agent', unpack(h)} end
    return {'held', 'name_taken', "A Computer named '" .. name .. "' is already in office '" .. office .. "'", unpack(h)}
  end
end
local prev = {}
if cur then prev = detach(cur) end
local seq = redis.call('INCR', P .. ':seq')
redis.call('HSET', mkey(sid), 'sid', sid, 'name', name, 'role', role, 'office', office, 'ver', ver, 'node', node)
redis.call('SADD', nkey(node, 'members'), sid)
if role == 'agent' then
  redis.call('SET', okey(office, 'agent'), sid)
  redis.call('HINCRBY', P .. ':stats', 'agents', 1)
else
  redis.call('HSET', okey(office, 'comp'), name, sid)
  redis.call('HINCRBY', P .. ':stats', 'computers', 1)
end
redis.call('ZADD', okey(office, 'order'), seq, sid)
redis.call('SADD', P .. ':offices', office)
return {'ok', unpack(prev)}
`;

/** leave: ARGV = P, sid, office. Reply: the removed member's fields, or an empty array. */
const LEAVE = `
local cur = load(ARGV[2])
if not cur or cur[4] ~= ARGV[3] then return {} end
return detach(cur)
`;

/** remove: ARGV = P, sid. Reply: the removed member's fields, or an empty array. */
const REMOVE = `
local cur = load(ARGV[2])
if not cur then return {} end
return detach(cur)
`;

/** member: ARGV = P, sid. Reply: the member's fields, or an empty array. */
const MEMBER = `
return load(ARGV[2]) or {}
`;

/** find_computer: ARGV = P, office, name. Reply: the Computer's fields, or an empty array. */
const FIND_COMPUTER = `
local sid = redis.call('HGET', okey(ARGV[2], 'comp'), ARGV[3])
if not sid then return {} end
return load(sid) or {}
`;

/** list: ARGV = P, office. Reply: the fields of every member, flat, Agent first. */
const LIST = `
local out = {}
local agent = redis.call('GET', okey(ARGV[2], 'agent'))
local function add(m) for i = 1, #m do out[#out + 1] = m[i] end end
if agent then
  local m = load(agent)
  if m then add(m) end
end
for _, sid in ipairs(redis.call('ZRANGE', okey(ARGV[2], 'order'), 0, -1)) do
  if sid ~= agent then
    local m = load(sid)
    if m then add(m) end
  end
end
return out
`;

/** counts: ARGV = P. Reply: {offices, agents, computers}. */
const COUNTS = `
local s = redis.call('HMGET', P .. ':stats', 'agents', 'computers')
return {redis.call('SCARD', P .. ':offices'), tonumber(s[1] or 0), tonumber(s[2] or 0)}
`;

/** register_node: ARGV = P, node, ttl_ms. Heartbeat key + node set. */
const REGISTER_NODE = `
redis.call('SET', nkey(ARGV[2], 'alive'), '1', 'PX', ARGV[3])
redis.call('SADD', P .. ':nodes', ARGV[2])
return 1
`;

/** heartbeat: ARGV = P, node, ttl_ms. Reply 1, or 0 if the node was reaped (it must fence). */
const HEARTBEAT = `
if redis.call('SISMEMBER', P .. ':nodes', ARGV[2]) == 0 then return 0 end
if not redis.call('SET', nkey(ARGV[2], 'alive'), '1', 'PX', ARGV[3], 'XX') then return 0 end
return 1
`;

/**
 * reap_node: ARGV = P, node, force ('1' on a node's own clean shutdown), reaper (the node asking).
 * Removes a dead node: every member it owned, its heartbeat and its place in the node set.
 * Liveness is re-checked inside the script, so a node that came back is never reaped. A reaper
 * whose own liveness channel shows no subscriber reaps nobody: right after Redis restarted, every
 * node's subscription is being restored, and a node missing its own cannot tell a dead node from
 * one whose subscription has not come back yet (both heartbeat keys may still be there).
 * Reply: {'alive'} or {'reaped', <fields of every removed member, flat>}.
 */
const REAP_NODE = `
local node = ARGV[2]
if ARGV[3] ~= '1' then
  if alive(node) then return {'alive'} end
  if ARGV[4] and not subscribed(ARGV[4]) then return {'alive'} end
end
local out = {'reaped'}
for _, sid in ipairs(redis.call('SMEMBERS', nkey(node, 'members'))) do
  local m = load(sid)
  if m and m[6] == node then
    detach(m)
    for i = 1, #m do out[#out + 1] = m[i] end
  end
end
redis.call('DEL', nkey(node, 'members'), nkey(node, 'alive'))
redis.call('SREM', P .. ':nodes', node)
return out
`;

/** A Lua script run by EVALSHA, loaded with EVAL the first time a server does not know it. */
export class LuaScript {
  readonly source: string;
  readonly sha: string;
  constructor(body: string) {
    this.source = PRELUDE + body;
    this.sha = createHash("sha1").update(this.source).digest("hex");
  }
}

export const Scripts = {
  join: new LuaScript(JOIN),
  leave: new LuaScript(LEAVE),
  remove: new LuaScript(REMOVE),
  member: new LuaScript(MEMBER),
  findComputer: new LuaScript(FIND_COMPUTER),
  list: new LuaScript(LIST),
  counts: new LuaScript(COUNTS),
  registerNode: new LuaScript(REGISTER_NODE),
  heartbeat: new LuaScript(HEARTBEAT),
  reapNode: new LuaScript(REAP_NODE),
} as const;

/** Number of fields per member in script replies (see FIELDS in the prelude). */
export const MEMBER_FIELDS = 6;
