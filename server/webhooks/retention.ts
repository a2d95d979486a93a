/**
 * The automatic webhook retention (PATIENT_DOCS_WEBHOOK_RETENTION_DAYS, off unless set): now and
 * then, what `webhooks prune --before <that many days ago>` removes goes (delivered and cancelled
 * messages, their attempts, the outbox events nothing needs any more). Dead letters stay: they
 * wait for an integrator's redelivery, and only IT removes them (`webhooks prune --dead`).
 *
 * Once per deployment at a time: where several instances share the database (PostgreSQL), the one
 * that takes the lease prunes for the interval, and another takes over when it is gone; on the
 * embedded database the one server of the data folder does (server.lock). The prune itself goes
 * in small transactions with other work between them (WebhookRepository.prune), so requests and
 * deliveries are not held up, and a prune by the admin CLI at the same moment is harmless.
 */
import type { WebhookPruneReport, WebhookRepository, WorkLeases } from '../db/types.js';
import type { DispatcherLog } from './dispatcher.js';

const RETENTION_LEASE = 'webhook-retention';
const DAY_MS = 86_400_000;

export interface RetentionOptions {
  /** Messages that ended this many days ago (and events that old) go. */
  days: number;
  /** How often to prune (each time, what has aged past `days` since). */
  intervalMs: number;
}

export const DEFAULT_RETENTION_INTERVAL_MS = 3_600_000;

export class WebhookRetention {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> = Promise.resolve();
  private readonly stopping = new AbortController();

  constructor(
    private readonly webhooks: WebhookRepository,
    private readonly options: RetentionOptions,
    private readonly log: DispatcherLog,
    /** Where several instances share the database: the lease that makes one of them prune. */
    private readonly shared?: WorkLeases,
    private readonly now: () => number = Date.now,
  ) {}

  /** Prunes what has aged past the retention, unless another instance holds the lease; undefined then. */
  async sweep(): Promise<WebhookPruneReport | undefined> {
    if (this.shared && !(await this.shared.take(RETENTION_LEASE, this.options.intervalMs))) return undefined;
    const before = new Date(this.now() - this.options.days * DAY_MS).toISOString();
    const report = await this.webhooks.prune({ before, dead: false, signal: this.stopping.signal });
    if (report.delivered + report.cancelled + report.attempts + report.events > 0) {
      this.log.info({ ...report, before }, 'webhook retention: removed messages that ended before the retention, their attempts and the events no message needs');
    }
    return report;
  }

  /** Prunes at once, then every interval, one prune at a time; a failure is logged and tried again next time. */
  start(): void {
    const run = (): void => {
      if (this.stopping.signal.aborted) return;
      this.running = this.running.then(() => this.sweep()).catch((error: unknown) => this.log.warn({ err: error }, 'webhook retention failed; it runs again at the next interval'));
    };
    run();
    this.timer = setInterval(run, this.options.intervalMs);
    this.timer.unref();
  }

  /** Stops the timer and a prune in progress after its current batch (the next start prunes the rest). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.stopping.abort();
    await this.running;
  }
}
