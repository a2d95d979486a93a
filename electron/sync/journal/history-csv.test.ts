import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { historyCsv } from './history-csv.js';
import type { Journal } from './journal.js';
import { openJournal } from './open-journal.js';
import type { SyncPair } from '../home/settings.js';

const PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-000000000001';
const chair1: SyncPair = { id: 'pair-1', folder: '/scans/chair 1', patientId: PATIENT, patientName: 'Jane Roe', remoteBasePath: '/scans', paused: false };
const chair2: SyncPair = { id: 'pair-2', folder: '/scans/chair 2', patientId: PATIENT, patientName: 'John Doe', remoteBasePath: '/scans', paused: false };

describe('the sync history export', () => {
  let directory: string;
  let journal: Journal;
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'history-csv-'));
    journal = openJournal(join(directory, 'journal.sqlite'), { now: () => Date.parse('2026-03-12T10:00:00Z') });
    for (const pair of [chair1, chair2, { ...chair2, id: 'pair-3' }]) journal.observe(pair.id, 'case/jaw.stl', { size: 1, mtimeMs: 1, remotePath: '/scans/case', fileName: 'jaw.stl' });
  });
  afterEach(() => {
    journal.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('keeps the rows of a folder no longer synced, labelled with the folder and patient recorded when it stopped', () => {
    const lines = historyCsv(journal, [chair1], [{ ...chair2, removedAt: 1 }]).trim().split('\r\n');
    expect(lines).toHaveLength(4);
    expect(lines).toContain('2026-03-12T10:00:00.000Z,/scans/chair 1,Jane Roe,case/jaw.stl,/scans/case/jaw.stl,queued,,,,');
    expect(lines).toContain('2026-03-12T10:00:00.000Z,/scans/chair 2 (no longer synced),John Doe,case/jaw.stl,/scans/case/jaw.stl,queued,,,,');
    // Stopped before its folder was recorded: still in the record, said as such.
    expect(lines).toContain('2026-03-12T10:00:00.000Z,a folder no longer synced,,case/jaw.stl,/scans/case/jaw.stl,queued,,,,');
  });

  it('says when the re-check found a scan missing on the server, on each of its rows, and nothing for the others', () => {
    const [lost, kept] = [journal.byPair('pair-1')[0]!, journal.byPair('pair-2')[0]!];
    journal.transition(lost.id, 'queued', { lostAt: Date.parse('2026-03-13T08:30:00Z') }, { event: 'queued', detail: "the server lost this scan's stored file; uploading it again from the folder" });
    journal.transition(kept.id, 'uploading', {}, { event: 'uploaded', detail: '=HYPERLINK("http://evil.example")' });
    const [header, ...rows] = historyCsv(journal, [chair1, chair2]).trim().split('\r\n');
    expect(header).toBe('time,folder,patient,file,server path,event,version,sha256,detail,found missing on the server at');
    expect(rows.filter((row) => row.includes('/scans/chair 1,'))).toEqual([
      '2026-03-12T10:00:00.000Z,/scans/chair 1,Jane Roe,case/jaw.stl,/scans/case/jaw.stl,queued,,,,2026-03-13T08:30:00.000Z',
      "2026-03-12T10:00:00.000Z,/scans/chair 1,Jane Roe,case/jaw.stl,/scans/case/jaw.stl,queued,,,the server lost this scan's stored file; uploading it again from the folder,2026-03-13T08:30:00.000Z",
    ]);
    // Still no formula a spreadsheet would run, and the column stays empty for a scan never found missing.
    expect(rows).toContain('2026-03-12T10:00:00.000Z,/scans/chair 2,John Doe,case/jaw.stl,/scans/case/jaw.stl,uploaded,,,"\'=HYPERLINK(""http://evil.example"")",');
  });
});
