/**
 * Whether the server can be reached: online or not, a proxy's word that the server behind it does
 * not answer (502, 504), and while either holds, one small request now and then that asks whether
 * it is back, so files waiting out retry delays grown to minutes go as soon as it is.
 */
import type { DocumentApi } from '../api/document-api.js';
import { classifyFailure } from '../upload/failure.js';
import type { EngineEvent } from './publisher.js';

/** Shorter than the retry delays grow to (minutes), so waiting files go soon after the server is back. */
export const PROBE_MS = 15_000;

export interface ConnectivityHost {
  started(): boolean;
  api(): DocumentApi | null;
  diskFull(): boolean;
  emit(event: EngineEvent): void;
  markPairs(): void;
  /** The server answered after it could not be reached: what waited for that goes now. */
  catchUp(): void;
}

export class Connectivity {
  private online = true;
  /** Set when a proxy said the server behind it does not answer (502, 504), until the server answers. */
  serverUnavailable = false;
  /** Files waiting for such an answer from a proxy (in memory: their journal code does not say so). */
  readonly unavailableFiles = new Set<number>();
  private probeTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly host: ConnectivityHost,
    private readonly probeMs: number,
  ) {}

  get isOnline(): boolean {
    return this.online;
  }

  /** Online, and no proxy said the server behind it does not answer. */
  get reachable(): boolean {
    return this.online && !this.serverUnavailable;
  }

  setOnline(online: boolean): void {
    if (this.online === online) return;
    this.online = online;
    this.host.emit({ type: 'online-changed', online });
    this.host.markPairs();
  }

  /**
   * The server answered: no proxy's 502/504 holds any more, no probe is needed. Returns the files
   * that waited for such an answer from a proxy (forgotten here; the caller makes them due).
   */
  answered(): number[] {
    this.serverUnavailable = false;
    this.stop();
    const behindProxy = [...this.unavailableFiles];
    this.unavailableFiles.clear();
    return behindProxy;
  }

  /**
   * While nothing answers, every file waits out its own delay (minutes after a weekend): one small
   * request (the patient list, one entry) asks now and then whether the server is back, so the waiting
   * files need not wait for the first of those delays, nor for a new scan, to find out.
   */
  scheduleProbe(): void {
    if (this.probeTimer || !this.host.started()) return;
    this.probeTimer = setTimeout(() => void this.probe(), this.probeMs);
  }

  stop(): void {
    clearTimeout(this.probeTimer);
    this.probeTimer = undefined;
  }

  private async probe(): Promise<void> {
    const api = this.host.api();
    if (!this.host.started() || (this.online && !this.serverUnavailable)) return void (this.probeTimer = undefined);
    let answered = true;
    if (api && !this.host.diskFull()) {
      try {
        await api.listPatients({ limit: 1 });
      } catch (error) {
        // A refusal (no scope for the patient list, a bad secret) is an answer too: the files find their own reasons.
        const verdict = classifyFailure(error);
        answered = !(verdict.kind === 'retry' && verdict.unavailable);
      }
    } else answered = false;
    this.probeTimer = undefined;
    if (!this.host.started()) return;
    if (answered && (!this.online || this.serverUnavailable)) {
      this.setOnline(true);
      this.host.catchUp();
    } else if (!answered) this.scheduleProbe();
  }
}
