/**
 * The connected organization's name, asked of the server (GET /v1/organizations/{id}) so that the
 * app shows the clinic by name instead of its id. Asked once per connection, again after a failure
 * (offline at start, a server that does not know the route yet) at most once a minute.
 */
import type { ApiClient } from '../api/api-client.js';

const RETRY_AFTER_MS = 60_000;

export class OrganizationName {
  private learned: { api: ApiClient; organizationId: string; name: string } | null = null;
  private asking: ApiClient | null = null;
  private lastFailure: { api: ApiClient; at: number } | null = null;

  constructor(private readonly now: () => number = Date.now) {}

  /** The name for this client's organization, or null while not known (then asked in the background; `onLearned` follows). */
  nameFor(api: ApiClient | null, organizationId: string, onLearned: () => void): string | null {
    if (!api) return null;
    if (this.learned?.api === api && this.learned.organizationId === organizationId) return this.learned.name;
    if (this.asking === api) return null;
    if (this.lastFailure?.api === api && this.now() - this.lastFailure.at < RETRY_AFTER_MS) return null;
    this.asking = api;
    api.organization().then(
      (organization) => {
        if (this.asking === api) this.asking = null;
        this.learned = { api, organizationId, name: organization.name };
        onLearned();
      },
      () => {
        if (this.asking === api) this.asking = null;
        this.lastFailure = { api, at: this.now() };
      },
    );
    return null;
  }
}
