/**
 * Server configuration from the environment (DESIGN §2). Every bad value is a single-line
 * ConfigError naming the variable, so IT sees exactly what to fix.
 */
import { isIP } from 'node:net';
import path from 'node:path';
import { readMasterKeys, type MasterKeys } from './identity/master-key.js';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export interface ServerConfig {
  host: string;
  port: number;
  publicUrl: string;
  /** False when publicUrl was derived from HOST and PORT (it then follows the port actually bound). */
  publicUrlExplicit: boolean;
  dataDir: string;
  databaseUrl: string | undefined;
  /**
   * PATIENT_DOCS_DATABASE_POOL_SIZE: connections to PostgreSQL this instance keeps for its requests
   * and work (one more listens for notifications); unused on SQLite.
   */
  databasePoolSize: number;
  /** PATIENT_DOCS_STORAGE_URL: s3://bucket[/prefix] keeps content in an object store; unset, on the local disk in the data dir. */
  storageUrl: string | undefined;
  /** PATIENT_DOCS_S3_ENDPOINT: an S3-compatible store's endpoint (path-style addressing); unset, AWS. */
  s3Endpoint: string | undefined;
  seedFile: string | undefined;
  adminToken: string | undefined;
  /** PATIENT_DOCS_METRICS_TOKEN: the bearer token /metrics asks for; unset, /metrics is off (404). */
  metricsToken: string | undefined;
  maxUploadBytes: number;
  webhookRetryDelaysMs: number[];
  webhookTimeoutMs: number;
  /**
   * PATIENT_DOCS_WEBHOOK_RETENTION_DAYS: webhook messages that ended this many days ago, their
   * attempts and the outbox events nothing needs go automatically (webhooks/retention.ts);
   * undefined (`never`, the default): only `webhooks prune` removes them.
   */
  webhookRetentionDays: number | undefined;
  allowPrivateCallbacks: boolean;
  /**
   * Plain http callbacks to a loopback address literal. No variable sets it: only the desktop app's
   * embedded server does, for the app's own listener on the same computer. Callbacks are HTTPS otherwise.
   */
  allowLoopbackHttpCallbacks?: boolean;
  audience: string;
  tokenLifetimeSeconds: number;
  /** Token requests per client and source address per minute before 429. */
  tokenRateLimitPerMinute: number;
  /** Failed client secrets per source address per minute before 429. */
  tokenAddressFailuresPerMinute: number;
  /** Failed client secrets per client id per minute before 429 (addresses where the client obtained a token exempt). */
  tokenClientFailuresPerMinute: number;
  /** Threads that check client secrets (scrypt), and how many checks may wait for one before 503. */
  secretVerifyThreads: number;
  secretVerifyQueue: number;
  /** How long a connection has to send a request's headers. */
  headersTimeoutMs: number;
  /** A request body must bring at least bodyMinBytesPerSecond × bodyRateWindowMs/1000 bytes in every window of bodyRateWindowMs, or it is cut off (408). */
  bodyMinBytesPerSecond: number;
  bodyRateWindowMs: number;
  /** Open connections per client address (IPv6: per /64); the trusted proxies are not limited. */
  maxConnectionsPerAddress: number;
  /** An external OIDC issuer whose tokens the API accepts besides its own. */
  externalIssuer: string | undefined;
  logLevel: string;
  /** Body limit of JSON requests (not uploads). */
  maxJsonBytes: number;
  /** On SIGINT/SIGTERM, how long requests in flight may take to finish before their connections are closed. */
  shutdownGraceMs: number;
  /**
   * Addresses (or CIDR ranges) of the reverse proxies in front of the server: a request from one of
   * them is taken to come from the address its X-Forwarded-For names (for the token rate limit,
   * the token's ipaddr and the log). Empty: the connection's own address, whatever a header says.
   */
  trustedProxies: string[];
  /** Audit entries waiting to be written (the database refusing them) past which access to patient files is refused. */
  auditMaxPending: number;
  /** The master keys the database's secrets are wrapped with (PATIENT_DOCS_KEY_FILE…); undefined: kept plain. */
  masterKeys?: MasterKeys;
}

type Env = Record<string, string | undefined>;

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

export function parseDuration(name: string, raw: string, defaultUnit: 'ms' | 's' = 's'): number {
  const match = DURATION.exec(raw.trim());
  if (!match) throw new ConfigError(`${name}=${JSON.stringify(raw)} is not a duration (examples: 500ms, 10s, 15m, 1h)`);
  const unit = match[2] ?? defaultUnit;
  return Math.round(Number(match[1]) * (UNIT_MS[unit] ?? 1000));
}

const SIZE = /^(\d+(?:\.\d+)?)\s*(b|kb|kib|mb|mib|gb|gib|tb|tib)?$/i;
const SIZE_FACTOR: Record<string, number> = {
  b: 1,
  kb: 1e3,
  kib: 1024,
  mb: 1e6,
  mib: 1024 ** 2,
  gb: 1e9,
  gib: 1024 ** 3,
  tb: 1e12,
  tib: 1024 ** 4,
};

export function parseSize(name: string, raw: string): number {
  const match = SIZE.exec(raw.trim());
  if (!match) throw new ConfigError(`${name}=${JSON.stringify(raw)} is not a size (examples: 1048576, 500MiB, 4GiB)`);
  const factor = SIZE_FACTOR[(match[2] ?? 'b').toLowerCase()] ?? 1;
  const bytes = Math.floor(Number(match[1]) * factor);
  if (bytes < 1) throw new ConfigError(`${name} must be at least 1 byte`);
  return bytes;
}

function parseBoolean(name: string, raw: string): boolean {
  const value = raw.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(value)) return true;
  if (['0', 'false', 'no', 'off', ''].includes(value)) return false;
  throw new ConfigError(`${name}=${JSON.stringify(raw)} must be true or false`);
}

/** Decimal digits only: Number() would take ' ' as 0 (a random port) and 0x50 as 80. */
function parsePort(raw: string): number {
  const digits = raw.trim();
  const port = /^\d{1,5}$/.test(digits) ? Number(digits) : Number.NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError(`PORT=${JSON.stringify(raw)} must be an integer from 0 to 65535`);
  return port;
}

/**
 * A base URL that others are appended to (`${base}/storage/v1/…`, `${issuer}/.well-known/…`): a
 * path prefix works, but a query or fragment would end up in the middle of every URL, and
 * credentials in every link handed out.
 */
function parseUrl(name: string, raw: string): string {
  let url: URL;
  try {
    url = new URL(raw.trim());
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('scheme');
  } catch {
    throw new ConfigError(`${name}=${JSON.stringify(raw)} must be an http(s) URL`);
  }
  if (url.search || url.hash || /[?#]/.test(raw)) {
    throw new ConfigError(`${name}=${JSON.stringify(raw)} must not have a query (?…) or fragment (#…); give scheme, host, port and at most a path prefix, like https://docs.example.org/patient-docs`);
  }
  if (url.username || url.password) throw new ConfigError(`${name}=${JSON.stringify(raw)} must not contain a user name or password`);
  return url.toString().replace(/\/$/, '');
}

/**
 * Durations with a range, each as [variable, default, min, max] in the units they are written in:
 * - token lifetime: at most a day (a longer token cannot be revoked for that long, and years
 *   overflow expires_in);
 * - shutdown grace: bounded so a stuck upload cannot hold a stop (or a service manager's) for long;
 * - webhook timeout: each attempt waits up to this long for an answer (and twice as long for a free
 *   connection): 0 would fail every delivery, and days would outgrow Node's timers just as surely.
 */
const BOUNDED_DURATIONS = {
  tokenLifetime: ['PATIENT_DOCS_TOKEN_LIFETIME', '1800s', '1s', '24h'],
  shutdownGrace: ['PATIENT_DOCS_SHUTDOWN_GRACE', '10s', '0s', '10m'],
  webhookTimeout: ['PATIENT_DOCS_WEBHOOK_TIMEOUT', '10s', '100ms', '10m'],
  headersTimeout: ['PATIENT_DOCS_HEADERS_TIMEOUT', '10s', '1s', '10m'],
  bodyRateWindow: ['PATIENT_DOCS_BODY_RATE_WINDOW', '30s', '1s', '10m'],
} as const;

function boundedDuration(env: Env, [name, fallback, min, max]: readonly [string, string, string, string]): number {
  const value = parseDuration(name, env[name] ?? fallback);
  if (value < parseDuration(name, min) || value > parseDuration(name, max)) {
    throw new ConfigError(`${name}=${JSON.stringify(env[name])} must be between ${min} and ${max}`);
  }
  return value;
}

/** `127.0.0.1, ::1, 10.0.0.0/8`: each an IPv4 or IPv6 address, optionally with a prefix length. */
export function parseTrustedProxies(name: string, raw: string): string[] {
  const entries = raw
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  for (const entry of entries) {
    const [address = '', prefix, extra] = entry.split('/');
    const family = isIP(address);
    const bits = family === 6 ? 128 : 32;
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits);
    if (family === 0 || !prefixOk || extra !== undefined) {
      throw new ConfigError(`${name}: ${JSON.stringify(entry)} is not an IP address or range; give the addresses of the reverse proxies, comma-separated (example: 127.0.0.1,::1 or 10.0.0.0/24)`);
    }
  }
  return entries;
}

function parseCount(name: string, raw: string): number {
  const value = Number(raw.trim());
  if (!/^\d{1,9}$/.test(raw.trim()) || value < 1) throw new ConfigError(`${name}=${JSON.stringify(raw)} must be a whole number from 1 to 999999999`);
  return value;
}

/** `never` (the default) or a whole number of days from 1 to 36500. */
function parseRetentionDays(name: string, raw: string | undefined): number | undefined {
  const text = raw?.trim() ?? '';
  if (text === '' || text === 'never') return undefined;
  if (!/^\d{1,5}$/.test(text) || Number(text) < 1 || Number(text) > 36_500) throw new ConfigError(`${name}=${JSON.stringify(raw)} must be never or a whole number of days from 1 to 36500`);
  return Number(text);
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

const MIN_METRICS_TOKEN_LENGTH = 16;

/** A token a scraper cannot guess: set it to turn /metrics on (docs/security.md). */
function parseMetricsToken(raw: string | undefined): string | undefined {
  const token = raw?.trim();
  if (!token) return undefined;
  if (token.length < MIN_METRICS_TOKEN_LENGTH) throw new ConfigError(`PATIENT_DOCS_METRICS_TOKEN must be at least ${MIN_METRICS_TOKEN_LENGTH} characters (a random value the Prometheus scraper sends as its bearer token)`);
  return token;
}

export function loadConfig(env: Env = process.env, cwd = process.cwd()): ServerConfig {
  const host = env.HOST?.trim() || '127.0.0.1';
  const port = env.PORT !== undefined && env.PORT !== '' ? parsePort(env.PORT) : 8080;
  const urlHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  const publicUrl = env.PATIENT_DOCS_PUBLIC_URL ? parseUrl('PATIENT_DOCS_PUBLIC_URL', env.PATIENT_DOCS_PUBLIC_URL) : `http://${urlHost}:${port}`;
  const databaseUrl = env.PATIENT_DOCS_DATABASE_URL?.trim() || undefined;
  if (databaseUrl !== undefined && !/^(postgres|postgresql):\/\//.test(databaseUrl) && !databaseUrl.startsWith('sqlite:')) {
    throw new ConfigError(`PATIENT_DOCS_DATABASE_URL must start with postgres:// or sqlite: (got ${JSON.stringify(databaseUrl.split(':')[0])}:…)`);
  }
  if (databaseUrl?.startsWith('sqlite:') && databaseUrl.slice('sqlite:'.length).trim() === '') {
    throw new ConfigError(`PATIENT_DOCS_DATABASE_URL=${JSON.stringify(databaseUrl)} names no file; use sqlite:<file> (relative to PATIENT_DOCS_DATA_DIR) or unset it for patient-docs.sqlite there`);
  }
  const poolSize = (env.PATIENT_DOCS_DATABASE_POOL_SIZE ?? '').trim() || '10';
  if (!/^\d{1,4}$/.test(poolSize) || Number(poolSize) < 1 || Number(poolSize) > 1000) {
    throw new ConfigError(`PATIENT_DOCS_DATABASE_POOL_SIZE=${JSON.stringify(env.PATIENT_DOCS_DATABASE_POOL_SIZE)} must be a whole number from 1 to 1000 (connections to PostgreSQL per instance)`);
  }
  const storageUrl = env.PATIENT_DOCS_STORAGE_URL?.trim() || undefined;
  if (storageUrl !== undefined && !/^s3:\/\/[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](\/.*)?$/.test(storageUrl)) {
    throw new ConfigError(`PATIENT_DOCS_STORAGE_URL must be s3://bucket or s3://bucket/prefix (got ${JSON.stringify(storageUrl.slice(0, 80))})`);
  }
  const s3Endpoint = env.PATIENT_DOCS_S3_ENDPOINT?.trim() ? parseUrl('PATIENT_DOCS_S3_ENDPOINT', env.PATIENT_DOCS_S3_ENDPOINT.trim()) : undefined;
  const retryRaw = env.PATIENT_DOCS_WEBHOOK_RETRY_DELAYS ?? '15m,15m,15m';
  const webhookRetryDelaysMs =
    retryRaw.trim() === '' ? [] : retryRaw.split(',').map((part) => parseDuration('PATIENT_DOCS_WEBHOOK_RETRY_DELAYS', part));
  const logLevel = (env.PATIENT_DOCS_LOG_LEVEL ?? env.LOG_LEVEL ?? 'info').toLowerCase();
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError(`PATIENT_DOCS_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  const lifetime = boundedDuration(env, BOUNDED_DURATIONS.tokenLifetime);
  const shutdownGraceMs = boundedDuration(env, BOUNDED_DURATIONS.shutdownGrace);
  const webhookTimeoutMs = boundedDuration(env, BOUNDED_DURATIONS.webhookTimeout);
  const rate = Number(env.PATIENT_DOCS_TOKEN_RATE_LIMIT ?? '120');
  if (!Number.isInteger(rate) || rate < 1) throw new ConfigError('PATIENT_DOCS_TOKEN_RATE_LIMIT must be a positive integer (token requests per client per minute)');
  const verifyQueue = env.PATIENT_DOCS_TOKEN_VERIFY_QUEUE ?? '16';
  if (!/^\d{1,6}$/.test(verifyQueue.trim())) throw new ConfigError(`PATIENT_DOCS_TOKEN_VERIFY_QUEUE=${JSON.stringify(verifyQueue)} must be a whole number from 0 to 999999`);
  return {
    host,
    port,
    publicUrl,
    publicUrlExplicit: Boolean(env.PATIENT_DOCS_PUBLIC_URL),
    dataDir: path.resolve(cwd, env.PATIENT_DOCS_DATA_DIR?.trim() || './data'),
    databaseUrl,
    databasePoolSize: Number(poolSize),
    storageUrl,
    s3Endpoint,
    seedFile: env.PATIENT_DOCS_SEED?.trim() ? path.resolve(cwd, env.PATIENT_DOCS_SEED.trim()) : undefined,
    adminToken: env.PATIENT_DOCS_ADMIN_TOKEN?.trim() || undefined,
    metricsToken: parseMetricsToken(env.PATIENT_DOCS_METRICS_TOKEN),
    maxUploadBytes: parseSize('PATIENT_DOCS_MAX_UPLOAD_BYTES', env.PATIENT_DOCS_MAX_UPLOAD_BYTES ?? '4GiB'),
    webhookRetryDelaysMs,
    webhookTimeoutMs,
    webhookRetentionDays: parseRetentionDays('PATIENT_DOCS_WEBHOOK_RETENTION_DAYS', env.PATIENT_DOCS_WEBHOOK_RETENTION_DAYS),
    allowPrivateCallbacks: parseBoolean('PATIENT_DOCS_ALLOW_PRIVATE_CALLBACKS', env.PATIENT_DOCS_ALLOW_PRIVATE_CALLBACKS ?? 'false'),
    audience: env.PATIENT_DOCS_AUDIENCE?.trim() || 'api://patient-docs',
    tokenLifetimeSeconds: Math.round(lifetime / 1000),
    tokenRateLimitPerMinute: rate,
    externalIssuer: env.PATIENT_DOCS_EXTERNAL_ISSUER ? parseUrl('PATIENT_DOCS_EXTERNAL_ISSUER', env.PATIENT_DOCS_EXTERNAL_ISSUER) : undefined,
    logLevel,
    maxJsonBytes: parseSize('PATIENT_DOCS_MAX_JSON_BYTES', env.PATIENT_DOCS_MAX_JSON_BYTES ?? '1MiB'),
    shutdownGraceMs,
    trustedProxies: parseTrustedProxies('PATIENT_DOCS_TRUSTED_PROXIES', env.PATIENT_DOCS_TRUSTED_PROXIES ?? ''),
    auditMaxPending: parseCount('PATIENT_DOCS_AUDIT_MAX_PENDING', env.PATIENT_DOCS_AUDIT_MAX_PENDING ?? '50000'),
    tokenAddressFailuresPerMinute: parseCount('PATIENT_DOCS_TOKEN_ADDRESS_FAILURES', env.PATIENT_DOCS_TOKEN_ADDRESS_FAILURES ?? '20'),
    tokenClientFailuresPerMinute: parseCount('PATIENT_DOCS_TOKEN_CLIENT_FAILURES', env.PATIENT_DOCS_TOKEN_CLIENT_FAILURES ?? '20'),
    secretVerifyThreads: parseCount('PATIENT_DOCS_TOKEN_VERIFY_THREADS', env.PATIENT_DOCS_TOKEN_VERIFY_THREADS ?? '1'),
    secretVerifyQueue: Number(verifyQueue.trim()),
    headersTimeoutMs: boundedDuration(env, BOUNDED_DURATIONS.headersTimeout),
    bodyMinBytesPerSecond: parseSize('PATIENT_DOCS_BODY_MIN_RATE', env.PATIENT_DOCS_BODY_MIN_RATE ?? '1KiB'),
    bodyRateWindowMs: boundedDuration(env, BOUNDED_DURATIONS.bodyRateWindow),
    maxConnectionsPerAddress: parseCount('PATIENT_DOCS_MAX_CONNECTIONS_PER_ADDRESS', env.PATIENT_DOCS_MAX_CONNECTIONS_PER_ADDRESS ?? '256'),
    ...masterKeysOf(env),
  };
}

function masterKeysOf(env: Env): { masterKeys?: MasterKeys } {
  const masterKeys = readMasterKeys(env);
  return masterKeys ? { masterKeys } : {};
}
