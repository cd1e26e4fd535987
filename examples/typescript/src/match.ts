// An authoritative match: players join, op code 1 is echoed back to its
// sender with the match's tick, op code 2 is relayed to everyone else, and
// the match ends itself once it has been empty for ten seconds.
//
// Each callback is a top-level function named in InitModule's
// registerMatch call: Nakama finds them by those names.

const ARENA_TICK_RATE = 5;
const ARENA_EMPTY_TICKS = 10 * ARENA_TICK_RATE;

const OP_ECHO = 1;
const OP_RELAY = 2;
const OP_WELCOME = 10;

interface ArenaState {
  players: { [sessionId: string]: nkruntime.Presence };
  count: number;
  emptyTicks: number;
  messages: number;
}

const arenaInit: nkruntime.MatchInitFunction<ArenaState> = function (ctx, logger, nk, params) {
  const mode: string = params.mode || "casual";
  logger.info("arena %s starting in %s mode", ctx.matchId, mode);
  const state: ArenaState = { players: {}, count: 0, emptyTicks: 0, messages: 0 };
  return { state, tickRate: ARENA_TICK_RATE, label: JSON.stringify({ arena: 1, mode: mode }) };
};

const arenaJoinAttempt: nkruntime.MatchJoinAttemptFunction<ArenaState> = function (
  ctx, logger, nk, dispatcher, tick, state, presence, metadata,
) {
  if (metadata.team === "spectators") {
    return { state, accept: false, rejectMessage: "no spectators in the arena" };
  }
  return { state, accept: true };
};

const arenaJoin: nkruntime.MatchJoinFunction<ArenaState> = function (
  ctx, logger, nk, dispatcher, tick, state, presences,
) {
  for (const p of presences) {
    state.players[p.sessionId] = p;
    state.count++;
  }
  dispatcher.broadcastMessage(OP_WELCOME, JSON.stringify({ players: state.count, tick: tick }), presences);
  return { state };
};

const arenaLeave: nkruntime.MatchLeaveFunction<ArenaState> = function (
  ctx, logger, nk, dispatcher, tick, state, presences,
) {
  for (const p of presences) {
    if (state.players[p.sessionId]) {
      delete state.players[p.sessionId];
      state.count--;
    }
  }
  return { state };
};

const arenaLoop: nkruntime.MatchLoopFunction<ArenaState> = function (
  ctx, logger, nk, dispatcher, tick, state, messages,
) {
  for (const m of messages) {
    state.messages++;
    const text = nk.binaryToString(m.data);
    if (m.opCode === OP_ECHO) {
      const reply = { text: text, tick: tick, from: m.sender.username, seen: state.messages };
      dispatcher.broadcastMessage(OP_ECHO, JSON.stringify(reply), [m.sender]);
    } else if (m.opCode === OP_RELAY) {
      dispatcher.broadcastMessage(OP_RELAY, text, null, m.sender);
    }
  }
  if (state.count === 0) {
    state.emptyTicks++;
    if (state.emptyTicks >= ARENA_EMPTY_TICKS) {
      return null;
    }
  } else {
    state.emptyTicks = 0;
  }
  return { state };
};

const arenaTerminate: nkruntime.MatchTerminateFunction<ArenaState> = function (
  ctx, logger, nk, dispatcher, tick, state, graceSeconds,
) {
  dispatcher.broadcastMessage(OP_WELCOME, JSON.stringify({ closing: graceSeconds }));
  return { state };
};

const arenaSignal: nkruntime.MatchSignalFunction<ArenaState> = function (
  ctx, logger, nk, dispatcher, tick, state, data,
) {
  return { state, data: JSON.stringify({ players: state.count, messages: state.messages, signal: data }) };
};
