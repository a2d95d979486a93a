import { describe, expect, it } from 'vitest';
import { SqliteStore } from '../db/sqlite/store.js';
import type { AuditEntryRecord, AuditRepository } from '../db/types.js';
import { AuditLog, type AuditLogger } from './log.js';
import { AUDITED_PATIENT, auditEntry } from '../../test/helpers/audit.js';

const PATIENT = AUDITED_PATIENT;
const entry = (index: number): AuditEntryRecord => auditEntry(index);

/** The real SQLite repository, with a disk that fills up and is freed again at the boundary. */
function faultyStore() {
  const store = SqliteStore.open(':memory:');
  const state = { full: false, appends: 0 };
  const repository: AuditRepository = {
    append: async (entries) => {
      state.appends += 1;
      if (state.full) throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
      return store.audit.append(entries);
    },
    search: (query) => store.audit.search(query),
    prune: (before) => store.audit.prune(before),
    count: () => store.audit.count(),
  };
  return { store, state, repository };
}

const logged: string[] = [];
const logger: AuditLogger = { error: (_object, message) => logged.push(message), warn: (_object, message) => logged.push(message), info: () => undefined };

async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('AuditLog', () => {
  it('writes entries in batches within a flush period, newest first when read', async () => {
    const { store, state, repository } = faultyStore();
    const log = new AuditLog(repository, { flushEveryMs: 20 });
    for (let index = 0; index < 2500; index += 1) log.record(entry(index));
    await until(async () => (await store.audit.count()) === 2500);
    // Whole batches (500 entries a transaction), not one write per entry.
    expect(state.appends).toBeLessThanOrEqual(6);
    const page = await store.audit.search({ patientId: PATIENT, offset: 0, limit: 2 });
    expect(page.total).toBe(2500);
    expect(page.rows.map((row) => row.requestId)).toEqual(['request-2499', 'request-2498']);
    expect(page.rows[0]).toMatchObject({ detail: { bytes: 2499 }, action: 'download', outcome: 'allowed', version: 1 });
    await log.close(1000);
    await store.close();
  });

  it('keeps every entry while the disk is full, refuses access past the limit, and writes them all once it is freed', async () => {
    const { store, state, repository } = faultyStore();
    const log = new AuditLog(repository, { flushEveryMs: 10, maxPending: 100 });
    log.useLogger(logger);
    state.full = true;
    for (let index = 0; index < 99; index += 1) log.record(entry(index));
    await until(() => state.appends >= 2);
    expect(log.refusal()).toBeUndefined();
    log.record(entry(99));
    const refusal = log.refusal();
    expect(refusal?.status).toBe(503);
    expect(refusal?.headers['Retry-After']).toBe('30');
    expect(refusal?.detail).toMatch(/cannot record it in its audit log/);
    expect(logged.some((line) => line.includes('entries cannot be written (SQLITE_FULL)'))).toBe(true);
    expect(await store.audit.count()).toBe(0);

    state.full = false;
    await until(async () => (await store.audit.count()) === 100);
    expect(log.refusal()).toBeUndefined();
    expect(logged.at(-1)).toMatch(/written again/);
    await log.close(1000);
    await store.close();
  });

  it('at shutdown writes what waits, tries again while the disk is full, and logs what it could not write', async () => {
    const { store, state, repository } = faultyStore();
    const log = new AuditLog(repository, { flushEveryMs: 60_000 });
    log.useLogger(logger);
    log.record(entry(1));
    expect(await log.close(1000)).toBe(0);
    expect(await store.audit.count()).toBe(1);

    const stuck = new AuditLog(repository, { flushEveryMs: 60_000 });
    const lines: Array<[Record<string, unknown>, string]> = [];
    stuck.useLogger({ error: (object, message) => lines.push([object, message]), warn: () => undefined, info: () => undefined });
    stuck.record(entry(2));
    state.full = true;
    setTimeout(() => (state.full = false), 150);
    expect(await stuck.close(5000)).toBe(0);
    expect(await store.audit.count()).toBe(2);

    const lost = new AuditLog(repository, { flushEveryMs: 60_000 });
    lost.useLogger({ error: (object, message) => lines.push([object, message]), warn: () => undefined, info: () => undefined });
    lost.record(entry(3));
    state.full = true;
    expect(await lost.close(200)).toBe(1);
    const last = lines.at(-1)!;
    expect(last[1]).toMatch(/1 entries could not be written to the database before the server stopped; they are in this log line/);
    expect((last[0].entries as AuditEntryRecord[])[0]!.requestId).toBe('request-3');
    await store.close();
  });
});
