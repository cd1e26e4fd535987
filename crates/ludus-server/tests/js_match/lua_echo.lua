-- A Lua match module created from JS with nk.matchCreate("lua_echo").
local M = {}
function M.match_init(context, params) return {}, 5, "lua echo" end
function M.match_join_attempt(context, dispatcher, tick, state, presence, metadata) return state, true end
function M.match_join(context, dispatcher, tick, state, presences) return state end
function M.match_leave(context, dispatcher, tick, state, presences) return state end
function M.match_loop(context, dispatcher, tick, state, messages) return state end
function M.match_terminate(context, dispatcher, tick, state, grace) return state end
function M.match_signal(context, dispatcher, tick, state, data) return state, "lua " .. data end
return M
