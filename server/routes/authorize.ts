/** What every organization-scoped route checks first: the token's scope, then its client's membership of the request's organization. */
import type { FastifyRequest } from 'fastify';
import type { AccessGuard } from '../domain/access.js';
import type { Principal } from '../identity/tokens.js';
import { principalOf } from '../plugins/auth.js';

/** The request's Organization-ID header, lowercased (the route's schema, OrganizationHeaders, requires it). */
export function organizationOf(request: FastifyRequest): string {
  return String(request.headers['organization-id']).toLowerCase();
}

/** The principal and the request's organization, once the principal holds `scope` (or one of `scopes`) and belongs to the organization. */
export async function authorizeOrganization(request: FastifyRequest, access: AccessGuard, ...scopes: [string, ...string[]]): Promise<{ principal: Principal; organizationId: string }> {
  const principal = principalOf(request);
  // One of the scopes is enough; without any, the first one is the one named in the 403.
  if (!scopes.some((scope) => principal.scopes.has(scope))) access.requireScope(principal, scopes[0]);
  const organizationId = organizationOf(request);
  await access.requireOrganization(principal, organizationId);
  return { principal, organizationId };
}
