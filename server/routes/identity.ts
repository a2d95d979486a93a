/**
 * The bundled identity provider (SPEC §4.4, §5; DESIGN §3): client-credentials token endpoint
 * (client_secret_post and client_secret_basic), discovery document and JWKS. Token errors keep
 * RFC 6749 §5.2 bodies.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { OAuthError, TokenResponse } from '../../shared/schemas.js';
import type { ClientRepository } from '../db/types.js';
import type { KeyStore } from '../identity/keys.js';
import { clientKey, sourceKey, type TokenAttempt, type TokenAttemptLimiter } from '../identity/rate-limit.js';
import type { SecretVerifier } from '../identity/secret-verifier.js';
import { decoyHash } from '../identity/secrets.js';
import type { TokenService } from '../identity/tokens.js';

export interface IdentityOptions {
  clients: ClientRepository;
  tokens: TokenService;
  keys: KeyStore;
  limiter: TokenAttemptLimiter;
  verifier: SecretVerifier;
  issuer: string;
  audience: string;
}

const TOKEN_BODY_LIMIT = 16 * 1024;

type OAuthErrorCode = 'invalid_request' | 'invalid_client' | 'unsupported_grant_type' | 'invalid_scope' | 'unauthorized_client' | 'rate_limited' | 'temporarily_unavailable';

/** When every thread checking secrets is busy and the queue is full: soon, not after the flood. */
const BUSY_RETRY_AFTER_SECONDS = 1;

/** RFC 6749 §5.1: token responses, and so their errors, are never cached. */
const NO_CACHE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };

function oauthError(reply: FastifyReply, status: number, error: OAuthErrorCode, description: string, headers: Record<string, string> = {}): FastifyReply {
  for (const [name, value] of Object.entries(headers)) void reply.header(name, value);
  return reply.code(status).headers(NO_CACHE).send({ error, error_description: description });
}

/** A parsed token request: its parameters, and the first one sent twice (RFC 6749 §3.2 forbids it). */
interface TokenForm {
  values: Record<string, string>;
  repeated: string | undefined;
}

function parseForm(body: string): TokenForm {
  const values: Record<string, string> = {};
  let repeated: string | undefined;
  for (const [name, value] of new URLSearchParams(body)) {
    if (Object.hasOwn(values, name)) repeated ??= name;
    else values[name] = value;
  }
  return { values, repeated };
}

interface Credentials {
  clientId: string;
  clientSecret: string;
  method: 'basic' | 'post';
}

function formDecoded(value: string): string | undefined {
  try {
    return decodeURIComponent(value);
  } catch {
    return undefined;
  }
}

function readCredentials(request: FastifyRequest, form: Record<string, string>): Credentials | { error: string } {
  const header = request.headers.authorization;
  if (header && /^Basic\s/i.test(header)) {
    const decoded = Buffer.from(header.replace(/^Basic\s+/i, ''), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 1) return { error: 'the Basic authorization header is malformed' };
    if (form.client_secret !== undefined) return { error: 'use one client authentication method, not both' };
    // RFC 6749 §2.3.1: both parts are percent-encoded before they are joined ('+' is kept as is:
    // clients that send a secret unencoded would otherwise fail).
    const clientId = formDecoded(decoded.slice(0, colon));
    const clientSecret = formDecoded(decoded.slice(colon + 1));
    if (clientId === undefined || clientSecret === undefined) return { error: 'the Basic authorization header is not valid percent-encoding' };
    // A client_id in the form may name the client again (RFC 6749 §3.2.1), never another one: the
    // token would silently be the header's client, with its scopes, not the one the caller meant.
    if (form.client_id !== undefined && form.client_id !== clientId) return { error: 'client_id in the form does not match the client of the Basic authorization header' };
    return { clientId, clientSecret, method: 'basic' };
  }
  if (!form.client_id) return { error: 'client_id is required' };
  if (!form.client_secret) return { error: 'client_secret is required' };
  return { clientId: form.client_id, clientSecret: form.client_secret, method: 'post' };
}

/** `scope` omitted or `<audience>/.default` → every granted scope; else a subset of them. */
export function resolveScopes(requested: string | undefined, granted: readonly string[], audience: string): string[] | { error: string } {
  const trimmed = requested?.trim() ?? '';
  if (trimmed === '' || trimmed === `${audience}/.default` || trimmed === '.default') return [...granted];
  const wanted = trimmed.split(/\s+/).map((scope) => (scope.startsWith(`${audience}/`) ? scope.slice(audience.length + 1) : scope));
  const missing = wanted.filter((scope) => !granted.includes(scope));
  if (missing.length > 0) return { error: `the client is not granted: ${missing.join(', ')}` };
  return [...new Set(wanted)];
}

export async function identityRoutes(app: FastifyInstance, options: IdentityOptions): Promise<void> {
  // What an unknown (or disabled) client's secret is checked against: the same work as a real
  // check, so the answer's timing does not tell which client ids exist.
  const decoy = decoyHash();
  // This scope parses forms only. Any other body (JSON, text, none) still reaches the handler, which
  // refuses it with an RFC 6749 body: OAuth clients read `error`, not a problem-details document.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: TOKEN_BODY_LIMIT }, (_request, body, done) => {
    done(null, parseForm(body as string));
  });
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: TOKEN_BODY_LIMIT }, (_request, _body, done) => done(null, undefined));
  // What fails before the handler runs (a body over the limit, a Content-Length that lies) is
  // answered in the same RFC 6749 shape; anything else goes on to the problem-details handler.
  app.setErrorHandler((error: FastifyError, _request, reply) => {
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return oauthError(reply, 413, 'invalid_request', `the token request is larger than ${TOKEN_BODY_LIMIT / 1024} KiB`);
    if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
      return oauthError(reply, 400, 'invalid_request', 'the token request is malformed');
    }
    throw error;
  });

  app.post(
    '/oauth2/token',
    {
      schema: {
        tags: ['identity'],
        summary: 'Obtain an access token (OAuth 2.0 client credentials)',
        consumes: ['application/x-www-form-urlencoded'],
        response: { 200: TokenResponse, 400: OAuthError, 401: OAuthError, 403: OAuthError, 429: OAuthError, 503: OAuthError },
      },
    },
    async (request, reply) => {
      const contentType = request.headers['content-type'] ?? '';
      if (!contentType.toLowerCase().startsWith('application/x-www-form-urlencoded')) {
        return oauthError(reply, 400, 'invalid_request', 'the token request must be application/x-www-form-urlencoded');
      }
      const { values: form, repeated } = (request.body ?? { values: {}, repeated: undefined }) as TokenForm;
      if (repeated !== undefined) return oauthError(reply, 400, 'invalid_request', `${repeated} must not be sent more than once`);
      const credentials = readCredentials(request, form);
      if ('error' in credentials) return oauthError(reply, 400, 'invalid_request', credentials.error);
      // Limits before any work: per client and source address, failures per address, and
      // failures per client id (see rate-limit.ts).
      const attempt: TokenAttempt = { client: clientKey(credentials.clientId), source: sourceKey(request.ip) };
      const retryAfter = await options.limiter.admit(attempt);
      if (retryAfter > 0) {
        return oauthError(reply, 429, 'rate_limited', `too many token requests; retry after ${retryAfter} s`, { 'Retry-After': String(retryAfter) });
      }
      if (form.grant_type !== 'client_credentials') {
        if (!form.grant_type) return oauthError(reply, 400, 'invalid_request', 'grant_type is required');
        return oauthError(reply, 400, 'unsupported_grant_type', 'only grant_type=client_credentials is supported');
      }
      const found = await options.clients.get(credentials.clientId);
      const client = found?.disabledAt === null ? found : undefined;
      const verdict = await options.verifier.verify(credentials.clientSecret, client?.secretHash ?? decoy, await options.limiter.familiar(attempt));
      if (verdict === 'busy') {
        const headers = { 'Retry-After': String(BUSY_RETRY_AFTER_SECONDS) };
        return oauthError(reply, 503, 'temporarily_unavailable', `too many token requests are being checked; retry after ${BUSY_RETRY_AFTER_SECONDS} s`, headers);
      }
      if (!client || verdict !== 'match') {
        await options.limiter.settle(attempt, 'failure');
        const headers: Record<string, string> = credentials.method === 'basic' ? { 'WWW-Authenticate': 'Basic realm="patient-docs"' } : {};
        return oauthError(reply, 401, 'invalid_client', 'client authentication failed', headers);
      }
      await options.limiter.settle(attempt, 'success');
      const scopes = resolveScopes(form.scope, client.scopes, options.audience);
      if ('error' in scopes) return oauthError(reply, 400, 'invalid_scope', scopes.error);
      const token = await options.tokens.issue(client.clientId, scopes, request.ip);
      return reply
        .headers(NO_CACHE)
        .send({ token_type: 'Bearer', expires_in: token.expiresIn, access_token: token.accessToken, scope: scopes.join(' ') });
    },
  );

  app.get('/.well-known/openid-configuration', { schema: { tags: ['identity'], summary: 'OpenID discovery document' } }, async () => ({
    issuer: options.issuer,
    token_endpoint: `${options.issuer}/oauth2/token`,
    jwks_uri: `${options.issuer}/.well-known/jwks.json`,
    grant_types_supported: ['client_credentials'],
    token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic'],
    id_token_signing_alg_values_supported: ['RS256'],
    response_types_supported: ['token'],
    subject_types_supported: ['public'],
    scopes_supported: ['Patient.File.Read', 'Patient.File.Write', 'Patient.Read', 'Webhook.Manage', `${options.audience}/.default`],
  }));

  app.get('/.well-known/jwks.json', { schema: { tags: ['identity'], summary: 'Public signing keys (JWKS)' } }, async (_request, reply) => {
    return reply.header('Cache-Control', 'public, max-age=300').send(await options.keys.jwks());
  });
}
