/**
 * Client-credentials tokens (SPEC §5): one cached token, refreshed before it expires, fetched by
 * a single request however many calls need it at once ("single flight"), and dropped on a 401 so
 * the caller's one retry gets a fresh one.
 */
import type { Got } from 'got';
import { ApiNetworkError, parseRetryAfter, TokenError, toNetworkError } from './api-errors.js';

export interface Credentials {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  /** Omitted: every scope granted to the client. */
  scope?: string;
}

export interface IssuedToken {
  accessToken: string;
  /** Epoch ms when the token is used no more (a margin before its real expiry). */
  refreshAt: number;
  expiresAt: number;
  scopes: string[];
}

export interface TokenManagerOptions {
  http: Got;
  credentials: Credentials;
  now?: () => number;
  timeoutMs?: number;
}

/** Refresh once this share of the lifetime has passed, but never later than a minute before expiry. */
const REFRESH_SHARE = 0.8;
const MAX_MARGIN_MS = 60_000;

export class TokenManager {
  private current: IssuedToken | undefined;
  private pending: Promise<IssuedToken> | undefined;
  private readonly now: () => number;

  constructor(private readonly options: TokenManagerOptions) {
    this.now = options.now ?? Date.now;
  }

  /** A valid token, from the cache when it is fresh enough. */
  async token(): Promise<IssuedToken> {
    if (this.current && this.now() < this.current.refreshAt) return this.current;
    this.pending ??= this.fetch().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  /** The server refused this token (401): forget it unless a newer one already replaced it. */
  invalidate(accessToken: string): void {
    if (this.current?.accessToken === accessToken) this.current = undefined;
  }

  private async fetch(): Promise<IssuedToken> {
    const { credentials } = this.options;
    const form: Record<string, string> = {
      grant_type: 'client_credentials',
      client_id: credentials.clientId,
      client_secret: credentials.clientSecret,
    };
    if (credentials.scope) form.scope = credentials.scope;
    const requestedAt = this.now();
    let response;
    try {
      response = await this.options.http.post(credentials.tokenUrl, {
        form,
        throwHttpErrors: false,
        responseType: 'text',
        retry: { limit: 0 },
        timeout: { request: this.options.timeoutMs ?? 30_000 },
      });
    } catch (error) {
      throw toNetworkError(error);
    }
    const body = parseJson(response.body);
    if (response.statusCode !== 200) {
      const oauth = body as { error?: unknown; error_description?: unknown } | undefined;
      throw new TokenError(
        response.statusCode,
        typeof oauth?.error === 'string' ? oauth.error : `http_${response.statusCode}`,
        typeof oauth?.error_description === 'string' ? oauth.error_description : null,
        parseRetryAfter(response.headers['retry-after']),
        typeof response.headers.location === 'string' ? response.headers.location : null,
      );
    }
    const token = body as { access_token?: unknown; expires_in?: unknown; scope?: unknown } | undefined;
    if (typeof token?.access_token !== 'string') throw new ApiNetworkError('EBADTOKEN', 'the token endpoint answered without an access_token');
    const lifetimeMs = (typeof token.expires_in === 'number' && token.expires_in > 0 ? token.expires_in : 1800) * 1000;
    const margin = Math.min(MAX_MARGIN_MS, lifetimeMs * (1 - REFRESH_SHARE));
    this.current = {
      accessToken: token.access_token,
      expiresAt: requestedAt + lifetimeMs,
      refreshAt: requestedAt + lifetimeMs - margin,
      scopes: typeof token.scope === 'string' ? token.scope.split(' ').filter(Boolean) : scopesFromJwt(token.access_token),
    };
    return this.current;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The `scp` claim, read without verifying (only to explain a refusal; the server verifies). */
export function scopesFromJwt(accessToken: string): string[] {
  const payload = accessToken.split('.')[1];
  if (!payload) return [];
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { scp?: unknown };
    return typeof claims.scp === 'string' ? claims.scp.split(' ').filter(Boolean) : [];
  } catch {
    return [];
  }
}
