// A Nakama-style TypeScript module, compiled by tsc into one plain script
// (build/index.js) that Ludus and Nakama both load unchanged.
//
//   RPC ts_hello          who is calling, and the payload back
//   RPC ts_save_progress  writes {"level": N} to the caller's storage and
//                         reads it back
//   RPC ts_reward         adds coins to the caller's wallet (ledger kept)
//   RPC ts_create_arena   creates an authoritative match of src/match.ts
//   before UpdateAccount  refuses an empty display name, trims the others
//   after AuthenticateDevice  stores when each account first signed in

const hello: nkruntime.RpcFunction = function (ctx, logger, nk, payload) {
  logger.info("ts_hello called by %s", ctx.userId);
  return JSON.stringify({ userId: ctx.userId, mode: ctx.executionMode, payload: payload });
};

interface Progress {
  level: number;
}

const saveProgress: nkruntime.RpcFunction = function (ctx, logger, nk, payload) {
  const input = JSON.parse(payload || "{}") as Partial<Progress>;
  if (typeof input.level !== "number" || input.level < 1) {
    throw { message: "level must be a positive number", code: nkruntime.Codes.INVALID_ARGUMENT } as nkruntime.Error;
  }
  const userId = ctx.userId as string;
  const acks = nk.storageWrite([
    { collection: "progress", key: "current", userId: userId, value: { level: input.level }, permissionRead: 1, permissionWrite: 0 },
  ]);
  const objects = nk.storageRead([{ collection: "progress", key: "current", userId: userId }]);
  return JSON.stringify({ version: acks[0].version, stored: objects[0].value });
};

const reward: nkruntime.RpcFunction = function (ctx, logger, nk, payload) {
  const coins = Number(JSON.parse(payload || "{}").coins || 10);
  const result = nk.walletUpdate(ctx.userId as string, { coins: coins }, { reason: "ts_reward" }, true);
  return JSON.stringify({ previous: result.previous.coins || 0, updated: result.updated.coins });
};

const createArena: nkruntime.RpcFunction = function (ctx, logger, nk, payload) {
  const params = JSON.parse(payload || "{}");
  return JSON.stringify({ matchId: nk.matchCreate("ts_arena", { mode: params.mode || "casual" }) });
};

const beforeUpdateAccount: nkruntime.BeforeHookFunction<nkruntime.UserUpdateAccount> = function (
  ctx, logger, nk, data,
) {
  if (data.displayName !== undefined) {
    const trimmed = data.displayName.replace(/^\s+|\s+$/g, "");
    if (trimmed === "") {
      throw { message: "display name must not be blank", code: nkruntime.Codes.INVALID_ARGUMENT } as nkruntime.Error;
    }
    data.displayName = trimmed;
  }
  return data;
};

const afterAuthenticateDevice: nkruntime.AfterHookFunction<nkruntime.Session, nkruntime.AuthenticateDeviceRequest> =
  function (ctx, logger, nk, session, request) {
    if (!session.created) {
      return;
    }
    nk.storageWrite([
      { collection: "profile", key: "first_sign_in", userId: ctx.userId, value: { device: true, at: Date.now() }, permissionRead: 1, permissionWrite: 0 },
    ]);
  };

let InitModule: nkruntime.InitModule = function (ctx, logger, nk, initializer) {
  initializer.registerRpc("ts_hello", hello);
  initializer.registerRpc("ts_save_progress", saveProgress);
  initializer.registerRpc("ts_reward", reward);
  initializer.registerRpc("ts_create_arena", createArena);
  initializer.registerBeforeUpdateAccount(beforeUpdateAccount);
  initializer.registerAfterAuthenticateDevice(afterAuthenticateDevice);
  initializer.registerMatch<ArenaState>("ts_arena", {
    matchInit: arenaInit,
    matchJoinAttempt: arenaJoinAttempt,
    matchJoin: arenaJoin,
    matchLeave: arenaLeave,
    matchLoop: arenaLoop,
    matchTerminate: arenaTerminate,
    matchSignal: arenaSignal,
  });
  logger.info("TypeScript module loaded");
};
