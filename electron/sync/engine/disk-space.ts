/**
 * A full disk on this computer: a journal write refused with SQLITE_FULL holds all work (no file's
 * failure), said once in plain words, and the journal is tried again every few seconds until it
 * takes a write; then the work goes on by itself.
 */
import { PLAIN_MESSAGES } from '../../../shared/bridge-errors.js';
import type { EngineEvent } from './publisher.js';

export const DISK_CHECK_MS = 2000;

export interface DiskSpaceHost {
  started(): boolean;
  /** True when the journal takes a write now (Journal.canWrite). */
  canWrite(): boolean;
  emit(event: EngineEvent): void;
  markPairs(): void;
  /** The disk has room again (`full` already false): what was held goes on. */
  spaceAgain(): void;
}

export class DiskSpace {
  /** Set while the journal cannot be written (a full disk): no file is started until it can. */
  private diskFull = false;
  private diskCheckTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly host: DiskSpaceHost,
    private readonly checkMs: number,
  ) {}

  get full(): boolean {
    return this.diskFull;
  }

  /** Plain words while this computer's disk is too full for the journal, else null. */
  get message(): string | null {
    return this.diskFull ? PLAIN_MESSAGES.DISK_FULL : null;
  }

  /**
   * Every step writes its journal row before it acts, so a refused write leaves each file in the
   * last state that was written (never `synced` unless verified); the crash-resume path takes
   * them on from there once the journal can be written again.
   */
  enterDiskFull(): void {
    if (!this.diskFull) {
      this.diskFull = true;
      this.host.emit({ type: 'disk-full-changed', message: PLAIN_MESSAGES.DISK_FULL });
      this.host.emit({ type: 'engine-error', message: PLAIN_MESSAGES.DISK_FULL });
      this.host.markPairs();
    }
    this.scheduleDiskCheck();
  }

  stop(): void {
    clearTimeout(this.diskCheckTimer);
    this.diskCheckTimer = undefined;
  }

  private scheduleDiskCheck(): void {
    if (this.diskCheckTimer || !this.host.started()) return;
    this.diskCheckTimer = setTimeout(() => {
      this.diskCheckTimer = undefined;
      if (!this.host.started()) return;
      if (!this.host.canWrite()) return this.scheduleDiskCheck();
      this.diskFull = false;
      this.host.spaceAgain();
    }, this.checkMs);
  }
}
