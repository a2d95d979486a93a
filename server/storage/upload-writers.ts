/**
 * One request at a time writes to a resumable upload, whichever instance it reached: a PATCH (its
 * bytes, and at the last byte the completion and the database commit), a DELETE, the clean-up of an
 * expired upload. On this instance a set of the uploads being written; across instances that share
 * the uploads (PostgreSQL, a shared content folder or bucket) a lease in the database per upload,
 * renewed while the bytes arrive (a slow clinic upload takes minutes). An instance that dies holding
 * one lets it go when its time is up.
 */
import type { WorkLeases } from '../db/types.js';
import { OffsetMismatchError } from './types.js';

/** A write's lease on its upload, renewed every third of it; a dead instance's ends after this. */
export const WRITE_LEASE_MS = 30_000;

export class UploadWriters {
  private readonly busy = new Set<string>();

  constructor(
    /** Where instances share the uploads (PostgreSQL): the database's leases. */
    private readonly shared?: WorkLeases,
    private readonly leaseMs = WRITE_LEASE_MS,
  ) {}

  /** Runs `work` as the upload's only writer; OffsetMismatchError (a 409) when another request is writing it. */
  async exclusively<T>(id: string, work: () => Promise<T>): Promise<T> {
    const held = await this.hold(id);
    if (!held) throw new OffsetMismatchError('another request is writing to this upload');
    try {
      return await work();
    } finally {
      await held.end();
    }
  }

  /** Runs `work` as the upload's only writer, or not at all (undefined) when another request is writing it: clean-up passes it by. */
  async ifFree<T>(id: string, work: () => Promise<T>): Promise<T | undefined> {
    const held = await this.hold(id);
    if (!held) return undefined;
    try {
      return await work();
    } finally {
      await held.end();
    }
  }

  private async hold(id: string): Promise<{ end(): Promise<void> } | undefined> {
    if (this.busy.has(id)) return undefined;
    this.busy.add(id);
    const shared = this.shared;
    if (!shared) return { end: async () => void this.busy.delete(id) };
    const key = `tus:${id}`;
    try {
      if (!(await shared.take(key, this.leaseMs))) {
        this.busy.delete(id);
        return undefined;
      }
    } catch (error) {
      this.busy.delete(id);
      throw error;
    }
    const renew = setInterval(() => void shared.take(key, this.leaseMs).catch(() => undefined), this.leaseMs / 3);
    renew.unref();
    return {
      end: async () => {
        clearInterval(renew);
        await shared.release(key).catch(() => undefined);
        this.busy.delete(id);
      },
    };
  }
}
