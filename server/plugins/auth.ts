/** The bearer-token guard: an onRequest hook that puts the verified principal on the request. */
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import { invalidToken, unauthorized } from '../errors.js';
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

async function authPlugin(app: FastifyInstance, options: { tokens: TokenService }): Promise<void> {
  app.decorateRequest('principal', null);
  // An onRequest hook in callback form: a token verified before (the usual case, 30 minutes of
  // requests per token) is taken without a promise or a turn of the event loop.
  app.decorate('authenticate', (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void => {
    const known = knownPrincipal(request, options.tokens);
    if (known) {
      request.principal = known;
      return done();
    }
    let token: string;
    try {
      token = bearerToken(request);
    } catch (error) {
      return done(error as Error);
    }
    options.tokens.verify(token).then(
      (principal) => {
        request.principal = principal;
        done();
      },
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
