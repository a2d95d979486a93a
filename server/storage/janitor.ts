/**
 * Garbage collection of storage: temp files of uploads that never finished (a dropped
 * connection, a crash), resumable uploads past their expiry, and committed objects no record
 * names (a crash between rename and the database commit). At start on a storage of its own (the
 * local disk of the one server of a data folder) nothing can be in flight, so everything abandoned
 * goes at once; afterwards, and always on a storage other instances share (an object store, or a
 * content folder instances on PostgreSQL share), only what is old enough to be surely abandoned.
 */
import type { WorkLeases } from '../db/types.js';
import type { ContentStorage, GarbageReport, ResumableStore } from './types.js';

const JANITOR_LEASE = 'janitor';

export interface JanitorOptions {
  intervalMs: number;
  /** A temp file untouched this long belongs to no live upload. */
  tempMaxAgeMs: number;
  /** An unreferenced object this old is not a commit in progress. */
  orphanMaxAgeMs: number;
  /**
   * On a storage instances share (a bucket), the search for unreferenced objects lists every object
   * and asks the database about each: it runs this often, not at every sweep.
   */
  sharedOrphanScanMs?: number;
}

export const DEFAULT_JANITOR_OPTIONS: JanitorOptions = { intervalMs: 10 * 60_000, tempMaxAgeMs: 6 * 3_600_000, orphanMaxAgeMs: 3_600_000, sharedOrphanScanMs: 6 * 3_600_000 };

export class StorageJanitor {
  private timer: NodeJS.Timeout | undefined;
  private lastOrphanScan = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly storage: ContentStorage,
    private readonly resumable: ResumableStore,
    private readonly isReferenced: (key: string) => Promise<boolean>,
    private readonly options: JanitorOptions = DEFAULT_JANITOR_OPTIONS,
    private readonly now: () => Date = () => new Date(),
    /** Where several instances share the content folder (PostgreSQL): the lease that makes one of them sweep. */
    private readonly shared?: WorkLeases,
  ) {}

  async sweep(atStart = false): Promise<GarbageReport> {
    if (this.shared) {
      // Several instances on one content folder: one of them sweeps per interval, and only what is
      // old enough to be surely abandoned (another instance's upload may be in flight at any time,
      // its own start included).
      if (!(await this.shared.take(JANITOR_LEASE, this.options.intervalMs))) return { tempFiles: 0, expiredUploads: 0, orphanObjects: 0 };
      atStart = false;
    }
    const expiredUploads = await this.resumable.removeExpired(this.now());
    const nothingInFlight = atStart && !this.storage.shared;
    const scanOrphans = !this.storage.shared || this.now().getTime() - this.lastOrphanScan >= (this.options.sharedOrphanScanMs ?? 0);
    if (scanOrphans) this.lastOrphanScan = this.now().getTime();
    const report = await this.storage.collectGarbage({
      tempOlderThanMs: nothingInFlight ? 0 : this.options.tempMaxAgeMs,
      ...(scanOrphans ? { isReferenced: this.isReferenced } : {}),
      orphanOlderThanMs: nothingInFlight ? 0 : this.options.orphanMaxAgeMs,
    });
    return { ...report, expiredUploads };
  }

  /** Sweeps everything abandoned by a previous run, then keeps sweeping in the background. */
  async start(): Promise<GarbageReport> {
    const report = await this.sweep(true);
    this.timer = setInterval(() => {
      this.sweep().catch(() => undefined);
    }, this.options.intervalMs);
    this.timer.unref();
    return report;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
