import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.js';

function refusal(env: Record<string, string>): string {
  try {
    loadConfig(env, '/srv');
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(env)}`);
}

describe('server configuration', () => {
  it('takes the defaults of DESIGN §2 with no variables set', () => {
    expect(loadConfig({}, '/srv')).toMatchObject({ host: '127.0.0.1', port: 8080, webhookTimeoutMs: 10_000, webhookRetryDelaysMs: [900_000, 900_000, 900_000] });
  });

  it.each([
    [{ PATIENT_DOCS_WEBHOOK_TIMEOUT: '0' }, 'PATIENT_DOCS_WEBHOOK_TIMEOUT="0" must be between 100ms and 10m'],
    [{ PATIENT_DOCS_WEBHOOK_TIMEOUT: '600h' }, 'PATIENT_DOCS_WEBHOOK_TIMEOUT="600h" must be between 100ms and 10m'],
    [{ PATIENT_DOCS_WEBHOOK_TIMEOUT: 'soon' }, 'PATIENT_DOCS_WEBHOOK_TIMEOUT="soon" is not a duration'],
  ])('refuses %j with one line naming the variable', (env, message) => {
    const text = refusal(env);
    expect(text).toContain(message);
    expect(text).not.toContain('\n');
  });

  it('turns /metrics on only with a metrics token long enough not to be guessed', () => {
    expect(loadConfig({}, '/srv').metricsToken).toBeUndefined();
    expect(loadConfig({ PATIENT_DOCS_METRICS_TOKEN: '  ' }, '/srv').metricsToken).toBeUndefined();
    expect(loadConfig({ PATIENT_DOCS_METRICS_TOKEN: 'a-scraper-token-0123' }, '/srv').metricsToken).toBe('a-scraper-token-0123');
    expect(refusal({ PATIENT_DOCS_METRICS_TOKEN: 'short' })).toContain('PATIENT_DOCS_METRICS_TOKEN must be at least 16 characters');
  });

  it('prunes webhook messages automatically only when PATIENT_DOCS_WEBHOOK_RETENTION_DAYS says after how many days', () => {
    expect(loadConfig({}, '/srv').webhookRetentionDays).toBeUndefined();
    expect(loadConfig({ PATIENT_DOCS_WEBHOOK_RETENTION_DAYS: 'never' }, '/srv').webhookRetentionDays).toBeUndefined();
    expect(loadConfig({ PATIENT_DOCS_WEBHOOK_RETENTION_DAYS: ' 30 ' }, '/srv').webhookRetentionDays).toBe(30);
    for (const raw of ['0', '30d', '-1', '99999']) {
      expect(refusal({ PATIENT_DOCS_WEBHOOK_RETENTION_DAYS: raw })).toBe(`PATIENT_DOCS_WEBHOOK_RETENTION_DAYS=${JSON.stringify(raw)} must be never or a whole number of days from 1 to 36500`);
    }
  });

  it('accepts timeouts at both ends of the range', () => {
    expect(loadConfig({ PATIENT_DOCS_WEBHOOK_TIMEOUT: '100ms' }, '/srv').webhookTimeoutMs).toBe(100);
    expect(loadConfig({ PATIENT_DOCS_WEBHOOK_TIMEOUT: '10m' }, '/srv').webhookTimeoutMs).toBe(600_000);
  });

  it.each([
    [{ PORT: ' ' }, 'PORT=" " must be an integer from 0 to 65535'],
    [{ PORT: '0x50' }, 'PORT="0x50" must be an integer from 0 to 65535'],
    [{ PORT: '8e1' }, 'PORT="8e1" must be an integer from 0 to 65535'],
    [{ PORT: '80.0' }, 'PORT="80.0" must be an integer from 0 to 65535'],
    [{ PORT: '-1' }, 'PORT="-1" must be an integer from 0 to 65535'],
    [{ PORT: '65536' }, 'PORT="65536" must be an integer from 0 to 65535'],
    [{ PATIENT_DOCS_DATABASE_URL: 'sqlite:' }, 'PATIENT_DOCS_DATABASE_URL="sqlite:" names no file; use sqlite:<file>'],
    [{ PATIENT_DOCS_DATABASE_URL: 'sqlite:  ' }, 'PATIENT_DOCS_DATABASE_URL="sqlite:" names no file'],
    [{ PATIENT_DOCS_TOKEN_LIFETIME: '9999999999h' }, 'PATIENT_DOCS_TOKEN_LIFETIME="9999999999h" must be between 1s and 24h'],
    [{ PATIENT_DOCS_TOKEN_LIFETIME: '25h' }, 'PATIENT_DOCS_TOKEN_LIFETIME="25h" must be between 1s and 24h'],
    [{ PATIENT_DOCS_TOKEN_LIFETIME: '500ms' }, 'PATIENT_DOCS_TOKEN_LIFETIME="500ms" must be between 1s and 24h'],
    [{ PATIENT_DOCS_PUBLIC_URL: 'https://docs.example.org/?tenant=1' }, 'PATIENT_DOCS_PUBLIC_URL="https://docs.example.org/?tenant=1" must not have a query (?…) or fragment (#…)'],
    [{ PATIENT_DOCS_PUBLIC_URL: 'https://docs.example.org/pd#top' }, 'PATIENT_DOCS_PUBLIC_URL="https://docs.example.org/pd#top" must not have a query'],
    [{ PATIENT_DOCS_PUBLIC_URL: 'https://docs.example.org/?' }, 'PATIENT_DOCS_PUBLIC_URL="https://docs.example.org/?" must not have a query'],
    [{ PATIENT_DOCS_PUBLIC_URL: 'https://it:secret@docs.example.org' }, 'PATIENT_DOCS_PUBLIC_URL="https://it:secret@docs.example.org" must not contain a user name or password'],
    [{ PATIENT_DOCS_PUBLIC_URL: 'ftp://docs.example.org' }, 'PATIENT_DOCS_PUBLIC_URL="ftp://docs.example.org" must be an http(s) URL'],
    [{ PATIENT_DOCS_EXTERNAL_ISSUER: 'https://login.example.org/tenant?x=1' }, 'PATIENT_DOCS_EXTERNAL_ISSUER="https://login.example.org/tenant?x=1" must not have a query'],
    [{ PATIENT_DOCS_SHUTDOWN_GRACE: '11m' }, 'PATIENT_DOCS_SHUTDOWN_GRACE="11m" must be between 0s and 10m'],
    [{ PATIENT_DOCS_SHUTDOWN_GRACE: 'forever' }, 'PATIENT_DOCS_SHUTDOWN_GRACE="forever" is not a duration'],
  ])('refuses %j with one line naming the variable and the rule', (env, message) => {
    const text = refusal(env);
    expect(text).toContain(message);
    expect(text).not.toContain('\n');
  });

  it('takes PORT as decimal digits, surrounding blanks aside, and an empty PORT as unset', () => {
    expect(loadConfig({ PORT: '0' }, '/srv').port).toBe(0);
    expect(loadConfig({ PORT: ' 8081 ' }, '/srv').port).toBe(8081);
    expect(loadConfig({ PORT: '65535' }, '/srv').port).toBe(65535);
    expect(loadConfig({ PORT: '08080' }, '/srv').port).toBe(8080);
    expect(loadConfig({ PORT: '' }, '/srv').port).toBe(8080);
  });

  it('caps the token lifetime at 24h and takes both ends', () => {
    expect(loadConfig({ PATIENT_DOCS_TOKEN_LIFETIME: '1s' }, '/srv').tokenLifetimeSeconds).toBe(1);
    expect(loadConfig({ PATIENT_DOCS_TOKEN_LIFETIME: '24h' }, '/srv').tokenLifetimeSeconds).toBe(86_400);
    expect(loadConfig({}, '/srv').tokenLifetimeSeconds).toBe(1800);
  });

  it('takes a public URL with a path prefix (behind a reverse proxy) and drops a trailing slash', () => {
    expect(loadConfig({ PATIENT_DOCS_PUBLIC_URL: 'https://docs.example.org/patient-docs/' }, '/srv').publicUrl).toBe('https://docs.example.org/patient-docs');
    expect(loadConfig({ PATIENT_DOCS_PUBLIC_URL: 'https://docs.example.org' }, '/srv').publicUrl).toBe('https://docs.example.org');
  });

  it('believes X-Forwarded-For only from the proxies named in PATIENT_DOCS_TRUSTED_PROXIES', () => {
    expect(loadConfig({}, '/srv').trustedProxies).toEqual([]);
    expect(loadConfig({ PATIENT_DOCS_TRUSTED_PROXIES: ' 127.0.0.1, ::1 ,10.0.0.0/24,fd00::/8' }, '/srv').trustedProxies).toEqual(['127.0.0.1', '::1', '10.0.0.0/24', 'fd00::/8']);
    for (const bad of ['nginx.local', '10.0.0.0/33', '::1/129', '127.0.0.1/8/1', '*']) {
      expect(refusal({ PATIENT_DOCS_TRUSTED_PROXIES: bad })).toMatch(/^PATIENT_DOCS_TRUSTED_PROXIES: .* is not an IP address or range/);
    }
  });

  it('waits 10s for requests in flight at shutdown unless told otherwise (0s to 10m)', () => {
    expect(loadConfig({}, '/srv').shutdownGraceMs).toBe(10_000);
    expect(loadConfig({ PATIENT_DOCS_SHUTDOWN_GRACE: '0' }, '/srv').shutdownGraceMs).toBe(0);
    expect(loadConfig({ PATIENT_DOCS_SHUTDOWN_GRACE: '10m' }, '/srv').shutdownGraceMs).toBe(600_000);
  });

  it('limits token guesses, secret checks, slow headers and bodies and connections per address, each changeable', () => {
    expect(loadConfig({}, '/srv')).toMatchObject({
      tokenAddressFailuresPerMinute: 20,
      tokenClientFailuresPerMinute: 20,
      secretVerifyThreads: 1,
      secretVerifyQueue: 16,
      headersTimeoutMs: 10_000,
      bodyMinBytesPerSecond: 1024,
      bodyRateWindowMs: 30_000,
      maxConnectionsPerAddress: 256,
    });
    const env = {
      PATIENT_DOCS_TOKEN_ADDRESS_FAILURES: '50',
      PATIENT_DOCS_TOKEN_CLIENT_FAILURES: '100',
      PATIENT_DOCS_TOKEN_VERIFY_THREADS: '2',
      PATIENT_DOCS_TOKEN_VERIFY_QUEUE: '0',
      PATIENT_DOCS_HEADERS_TIMEOUT: '30s',
      PATIENT_DOCS_BODY_MIN_RATE: '256',
      PATIENT_DOCS_BODY_RATE_WINDOW: '2m',
      PATIENT_DOCS_MAX_CONNECTIONS_PER_ADDRESS: '1000',
    };
    expect(loadConfig(env, '/srv')).toMatchObject({
      tokenAddressFailuresPerMinute: 50,
      tokenClientFailuresPerMinute: 100,
      secretVerifyThreads: 2,
      secretVerifyQueue: 0,
      headersTimeoutMs: 30_000,
      bodyMinBytesPerSecond: 256,
      bodyRateWindowMs: 120_000,
      maxConnectionsPerAddress: 1000,
    });
    expect(refusal({ PATIENT_DOCS_HEADERS_TIMEOUT: '0' })).toContain('PATIENT_DOCS_HEADERS_TIMEOUT="0" must be between 1s and 10m');
    expect(refusal({ PATIENT_DOCS_BODY_MIN_RATE: 'slow' })).toContain('PATIENT_DOCS_BODY_MIN_RATE="slow" is not a size');
    expect(refusal({ PATIENT_DOCS_TOKEN_VERIFY_THREADS: '0' })).toContain('PATIENT_DOCS_TOKEN_VERIFY_THREADS="0" must be a whole number');
    expect(refusal({ PATIENT_DOCS_TOKEN_VERIFY_QUEUE: '-1' })).toContain('PATIENT_DOCS_TOKEN_VERIFY_QUEUE="-1" must be a whole number from 0');
  });

  it('refuses access to patient files past 50,000 unwritten audit entries unless told otherwise', () => {
    expect(loadConfig({}, '/srv').auditMaxPending).toBe(50_000);
    expect(loadConfig({ PATIENT_DOCS_AUDIT_MAX_PENDING: '200000' }, '/srv').auditMaxPending).toBe(200_000);
    for (const raw of ['0', '-1', '5k', '1e6', '']) {
      expect(() => loadConfig({ PATIENT_DOCS_AUDIT_MAX_PENDING: raw }, '/srv')).toThrow(/^PATIENT_DOCS_AUDIT_MAX_PENDING=".*" must be a whole number from 1 to 999999999$/);
    }
  });

  it('takes sqlite:<file> relative to the data directory', () => {
    expect(loadConfig({ PATIENT_DOCS_DATABASE_URL: 'sqlite:docs.db' }, '/srv').databaseUrl).toBe('sqlite:docs.db');
  });

  it('keeps 10 connections to PostgreSQL per instance unless told otherwise (1 to 1000)', () => {
    expect(loadConfig({}, '/srv').databasePoolSize).toBe(10);
    expect(loadConfig({ PATIENT_DOCS_DATABASE_POOL_SIZE: ' 3 ' }, '/srv').databasePoolSize).toBe(3);
    expect(loadConfig({ PATIENT_DOCS_DATABASE_POOL_SIZE: '1000' }, '/srv').databasePoolSize).toBe(1000);
    for (const raw of ['0', '1001', '2.5', '-1', 'ten', '1e2']) {
      expect(() => loadConfig({ PATIENT_DOCS_DATABASE_POOL_SIZE: raw }, '/srv')).toThrow(/^PATIENT_DOCS_DATABASE_POOL_SIZE=".*" must be a whole number from 1 to 1000 \(connections to PostgreSQL per instance\)$/);
    }
  });
});
