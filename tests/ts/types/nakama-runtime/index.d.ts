// Ludus's stand-in for the `nakama-runtime` type definitions, written for
// this test: only the declarations examples/typescript uses, with the
// names and shapes of Nakama's `nkruntime` namespace. Nakama publishes the
// full definitions on GitHub (heroiclabs/nakama-common), not on the npm
// registry, which is all this project's machines reach. A real copy given
// to scripts/test through NAKAMA_RUNTIME_TYPES is used instead of this one.
declare namespace nkruntime {
  type Context = {
    env: { [key: string]: string };
    executionMode: string;
    node: string;
    version: string;
    headers?: { [key: string]: string[] };
    queryParams?: { [key: string]: string[] };
    userId?: string;
    username?: string;
    vars?: { [key: string]: string };
    userSessionExp?: number;
    sessionId?: string;
    clientIp?: string;
    clientPort?: string;
    matchId?: string;
    matchNode?: string;
    matchLabel?: string;
    matchTickRate?: number;
    lang?: string;
  };

  const enum Codes {
    CANCELLED = 1,
    UNKNOWN = 2,
    INVALID_ARGUMENT = 3,
    DEADLINE_EXCEEDED = 4,
    NOT_FOUND = 5,
    ALREADY_EXISTS = 6,
    PERMISSION_DENIED = 7,
    RESOURCE_EXHAUSTED = 8,
    FAILED_PRECONDITION = 9,
    ABORTED = 10,
    OUT_OF_RANGE = 11,
    UNIMPLEMENTED = 12,
    INTERNAL = 13,
    UNAVAILABLE = 14,
    DATA_LOSS = 15,
    UNAUTHENTICATED = 16,
  }

  type Error = { message: string; code: Codes };

  interface Logger {
    info(format: string, ...args: any[]): string;
    warn(format: string, ...args: any[]): string;
    error(format: string, ...args: any[]): string;
    debug(format: string, ...args: any[]): string;
  }

  type ReadPermissionValues = 0 | 1 | 2;
  type WritePermissionValues = 0 | 1;

  interface StorageReadRequest {
    key: string;
    collection: string;
    userId: string;
  }

  interface StorageWriteRequest {
    key: string;
    collection: string;
    userId: string | undefined;
    value: { [key: string]: any };
    version?: string;
    permissionRead?: ReadPermissionValues;
    permissionWrite?: WritePermissionValues;
  }

  interface StorageObject {
    key: string;
    collection: string;
    userId: string;
    version: string;
    permissionRead: ReadPermissionValues;
    permissionWrite: WritePermissionValues;
    createTime: number;
    updateTime: number;
    value: { [key: string]: any };
  }

  interface StorageWriteAck {
    key: string;
    collection: string;
    userId: string;
    version: string;
  }

  interface WalletUpdateResult {
    userId: string;
    updated: { [key: string]: number };
    previous: { [key: string]: number };
  }

  interface Nakama {
    binaryToString(data: ArrayBuffer): string;
    storageRead(keys: StorageReadRequest[]): StorageObject[];
    storageWrite(keys: StorageWriteRequest[]): StorageWriteAck[];
    walletUpdate(
      userId: string,
      changeset: { [key: string]: number },
      metadata?: { [key: string]: any },
      updateLedger?: boolean,
    ): WalletUpdateResult;
    matchCreate(module: string, params?: { [key: string]: any }): string;
  }

  interface Presence {
    userId: string;
    sessionId: string;
    username: string;
    node: string;
  }

  interface MatchMessage {
    sender: Presence;
    persistence: boolean;
    status: string;
    opCode: number;
    data: ArrayBuffer;
    reliable: boolean;
    receiveTimeMs: number;
  }

  interface MatchDispatcher {
    broadcastMessage(
      opcode: number,
      data?: ArrayBuffer | string | null,
      presences?: Presence[] | null,
      sender?: Presence | null,
      reliable?: boolean,
    ): void;
    matchKick(presences: Presence[]): void;
    matchLabelUpdate(label: string): void;
  }

  interface MatchState {
    [key: string]: any;
  }

  interface MatchInitFunction<State = MatchState> {
    (ctx: Context, logger: Logger, nk: Nakama, params: { [key: string]: any }): {
      state: State;
      tickRate: number;
      label: string;
    };
  }

  interface MatchJoinAttemptFunction<State = MatchState> {
    (
      ctx: Context, logger: Logger, nk: Nakama, dispatcher: MatchDispatcher, tick: number,
      state: State, presence: Presence, metadata: { [key: string]: any },
    ): { state: State; accept: boolean; rejectMessage?: string } | null;
  }

  interface MatchJoinFunction<State = MatchState> {
    (
      ctx: Context, logger: Logger, nk: Nakama, dispatcher: MatchDispatcher, tick: number,
      state: State, presences: Presence[],
    ): { state: State } | null;
  }

  interface MatchLeaveFunction<State = MatchState> {
    (
      ctx: Context, logger: Logger, nk: Nakama, dispatcher: MatchDispatcher, tick: number,
      state: State, presences: Presence[],
    ): { state: State } | null;
  }

  interface MatchLoopFunction<State = MatchState> {
    (
      ctx: Context, logger: Logger, nk: Nakama, dispatcher: MatchDispatcher, tick: number,
      state: State, messages: MatchMessage[],
    ): { state: State } | null;
  }

  interface MatchTerminateFunction<State = MatchState> {
    (
      ctx: Context, logger: Logger, nk: Nakama, dispatcher: MatchDispatcher, tick: number,
      state: State, graceSeconds: number,
    ): { state: State } | null;
  }

  interface MatchSignalFunction<State = MatchState> {
    (
      ctx: Context, logger: Logger, nk: Nakama, dispatcher: MatchDispatcher, tick: number,
      state: State, data: string,
    ): { state: State; data?: string } | null;
  }

  interface MatchHandler<State = MatchState> {
    matchInit: MatchInitFunction<State>;
    matchJoinAttempt: MatchJoinAttemptFunction<State>;
    matchJoin: MatchJoinFunction<State>;
    matchLeave: MatchLeaveFunction<State>;
    matchLoop: MatchLoopFunction<State>;
    matchTerminate: MatchTerminateFunction<State>;
    matchSignal: MatchSignalFunction<State>;
  }

  interface RpcFunction {
    (ctx: Context, logger: Logger, nk: Nakama, payload: string): string | void;
  }

  interface BeforeHookFunction<T> {
    (ctx: Context, logger: Logger, nk: Nakama, data: T): T | void;
  }

  interface AfterHookFunction<T, K> {
    (ctx: Context, logger: Logger, nk: Nakama, data: T, request: K): void;
  }

  interface UserUpdateAccount {
    userId: string;
    username?: string;
    displayName?: string;
    avatarUrl?: string;
    langTag?: string;
    location?: string;
    timezone?: string;
    metadata?: { [key: string]: any };
  }

  interface Session {
    created?: boolean;
    token?: string;
    refreshToken?: string;
  }

  interface AccountDevice {
    id: string;
    vars?: { [key: string]: string };
  }

  interface AuthenticateDeviceRequest {
    account?: AccountDevice;
    create?: boolean;
    username?: string;
  }

  interface Initializer {
    registerRpc(id: string, func: RpcFunction): void;
    registerBeforeUpdateAccount(fn: BeforeHookFunction<UserUpdateAccount>): void;
    registerAfterAuthenticateDevice(fn: AfterHookFunction<Session, AuthenticateDeviceRequest>): void;
    registerMatch<State = MatchState>(name: string, functions: MatchHandler<State>): void;
  }

  interface InitModule {
    (ctx: Context, logger: Logger, nk: Nakama, initializer: Initializer): void;
  }
}
