// The server tests' JS module (tests/http/js_rpc.rs, tests/ws/js_rpc.rs):
// a Nakama-style bundle with a global InitModule.
function echo(ctx, logger, nk, payload) {
  return payload;
}

function whoAmI(ctx, logger, nk, payload) {
  return JSON.stringify({ userId: ctx.userId || null, username: ctx.username || null, mode: ctx.executionMode, env: ctx.env });
}

function denied(ctx, logger, nk, payload) {
  throw { message: "nope, not for you", code: 7 };
}

function broken(ctx, logger, nk, payload) {
  throw new Error("broken on purpose");
}

function earn(ctx, logger, nk, payload) {
  if (!ctx.userId) throw { message: "earn needs a session", code: 16 };
  var coins = JSON.parse(payload).coins;
  var r = nk.walletUpdate(ctx.userId, { coins: coins }, { source: "earn" }, true);
  logger.withField("user", ctx.userId).info("earned %d coins", coins);
  return JSON.stringify({ coins: r.updated.coins, before: r.previous.coins || 0 });
}

// Only gold players go into the js_players index.
function goldOnly(ctx, logger, nk, write) {
  return write.value.tier === "gold" && write.collection === "js_profiles";
}

function InitModule(ctx, logger, nk, initializer) {
  initializer.registerStorageIndex("js_players", "js_profiles", "", ["tier", "name"], [], 100, false);
  initializer.registerStorageIndexFilter("js_players", goldOnly);
  initializer.registerRpc("js_echo", echo);
  initializer.registerRpc("js_whoami", whoAmI);
  initializer.registerRpc("js_denied", denied);
  initializer.registerRpc("js_broken", broken);
  initializer.registerRpc("js_earn", earn);
}
