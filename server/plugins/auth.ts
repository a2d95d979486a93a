/** The bearer-token guard: an onRequest hook that puts the verified principal on the request. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
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

export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw unauthorized('the request is not authenticated');
  return request.principal;
}

async function authPlugin(app: FastifyInstance, options: { tokens: TokenService }): Promise<void> {
  app.decorateRequest('principal', null);
  app.decorate('authenticate', async (request: FastifyRequest) => {
    try {
      request.principal = await options.tokens.verify(bearerToken(request));
    } catch (error) {
      if (error instanceof TokenError) throw invalidToken(error.message);
      throw error;
    }
  });
}

declare module 'fastify' {
  interface FastifyInstance {
    authenticate(request: FastifyRequest): Promise<void>;
  }
}

export default fp(authPlugin, { name: 'auth' });
