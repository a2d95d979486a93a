/**
 * A client's registration as it is now, for every request its token makes: a token carries the
 * scopes granted when it was issued (up to 30 minutes ago), and a scope the admin has taken away
 * since must stop working as soon as a disabled client does. Read from the store at most every
 * `ttlMs` per client, the freshness of AccessGuard's disabled flag and organizations: STANDING_TTL_MS
 * on the embedded database, under a second where several instances share one (server/context.ts).
 */
import type { ClientRepository } from '../db/types.js';
import type { Principal } from './tokens.js';

/** As AccessGuard's membership cache: a change by the admin is in force within this long (one process). */
export const STANDING_TTL_MS = 5000;
const CAPACITY = 10_000;

interface Standing {
  /** Undefined: unknown or disabled. */
  scopes: ReadonlySet<string> | undefined;
  loadedAt: number;
  /** Each token's principal narrowed to these scopes, made once per token and load. */
  narrowed: WeakMap<Principal, Principal>;
}

export class ClientStandings {
  private readonly standings = new Map<string, Standing>();

  constructor(
    private readonly clients: ClientRepository,
    private readonly now: () => number = Date.now,
    private readonly ttlMs = STANDING_TTL_MS,
  ) {}

  /**
   * The principal with only the scopes its client still holds; undefined when the client is no longer
   * registered or is disabled. Answered in this turn when the client was read in the last
   * `ttlMs`, the usual case; else a promise.
   */
  current(principal: Principal): Principal | undefined | Promise<Principal | undefined> {
    const standing = this.fresh(principal.clientId);
    if (standing) return narrow(principal, standing);
    return this.load(principal.clientId).then((loaded) => narrow(principal, loaded));
  }

  private fresh(clientId: string): Standing | undefined {
    const standing = this.standings.get(clientId);
    return standing && this.now() - standing.loadedAt < this.ttlMs ? standing : undefined;
  }

  private async load(clientId: string): Promise<Standing> {
    const client = await this.clients.get(clientId);
    const standing: Standing = {
      scopes: client && client.disabledAt === null ? new Set(client.scopes) : undefined,
      loadedAt: this.now(),
      narrowed: new WeakMap(),
    };
    // Only clients that hold a verified token get here: the map is bounded by the registered clients.
    if (this.standings.size >= CAPACITY) this.standings.clear();
    this.standings.set(clientId, standing);
    return standing;
  }
}

function narrow(principal: Principal, standing: Standing): Principal | undefined {
  const granted = standing.scopes;
  if (granted === undefined) return undefined;
  const made = standing.narrowed.get(principal);
  if (made) return made;
  const scopes = new Set([...principal.scopes].filter((scope) => granted.has(scope)));
  const narrowed = scopes.size === principal.scopes.size ? principal : { ...principal, scopes };
  standing.narrowed.set(principal, narrowed);
  return narrowed;
}
