/** The bearer-token guard: an onRequest hook that puts the verified principal on the request. */
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import { invalidToken, unauthorized } from '../errors.js';
import type { ClientStandings } from '../identity/client-standing.js';
import { TokenError, type Principal, type TokenService } from '../identity/tokens.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
}

export function bearerToken(request: FastifyRequest): string {
  const header = request.headers.authorization;
  if (!header) throw unauthorized('the Authorization header with a Bearer token is missing');
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match?.[1]) throw unauthorized('the Authorization header must be "Bearer <access token>"');
  return match[1];
}

/**
 * The principal of a request whose header is exactly "Bearer <a token verified before>", the usual
 * case (a token serves 30 minutes of requests), found without parsing the header. Any other
 * header goes the whole way: a verified token holds no white space, so no other can match.
 */
function knownPrincipal(request: FastifyRequest, tokens: TokenService): Principal | undefined {
  const header = request.headers.authorization;
  return header !== undefined && header.startsWith('Bearer ') ? tokens.verifiedBefore(header.slice(7)) : undefined;
}

export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw unauthorized('the request is not authenticated');
  return request.principal;
}

const NO_LONGER_REGISTERED = 'the client is not registered or has been disabled';

async function authPlugin(app: FastifyInstance, options: { tokens: TokenService; standings: ClientStandings }): Promise<void> {
  app.decorateRequest('principal', null);
  /** The verified principal with the scopes its client holds now (a scope taken away ends at once, not at the token's expiry). */
  const admit = (request: FastifyRequest, verified: Principal, done: HookHandlerDoneFunction): void => {
    const settle = (current: Principal | undefined): void => {
      if (!current) return done(unauthorized(NO_LONGER_REGISTERED));
      request.principal = current;
      done();
    };
    const current = options.standings.current(verified);
    if (current instanceof Promise) current.then(settle, (error: unknown) => done(error as Error));
    else settle(current);
  };
  // An onRequest hook in callback form: a token verified before (the usual case, 30 minutes of
  // requests per token) is taken without a promise or a turn of the event loop.
  app.decorate('authenticate', (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void => {
    const known = knownPrincipal(request, options.tokens);
    if (known) return admit(request, known, done);
    let token: string;
    try {
      token = bearerToken(request);
    } catch (error) {
      return done(error as Error);
    }
    options.tokens.verify(token).then(
      (principal) => admit(request, principal, done),
      (error: unknown) => done(error instanceof TokenError ? invalidToken(error.message) : (error as Error)),
    );
  });
}

declare module 'fastify' {
  interface FastifyInstance {
    authenticate(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void;
  }
}

export default fp(authPlugin, { name: 'auth' });
