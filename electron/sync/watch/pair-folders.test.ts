import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeOverlap, overlappingPair, realFolder } from './pair-folders.js';
import type { SyncPair } from '../home/settings.js';

const pair = (folder: string, patientName = 'Jane Roe'): SyncPair => ({ id: folder, folder, patientId: 'p1', patientName, remoteBasePath: '/scans', paused: false });

describe('sync folders that overlap', () => {
  const pairs = [pair('/exports/chair-1'), pair('/exports/cbct', 'Max Mustermann')];

  it('finds the same folder, a folder inside a synced one, and one around it', () => {
    expect(overlappingPair(pairs, '/exports/chair-1/')?.relation).toBe('same');
    expect(overlappingPair(pairs, '/exports/chair-1/case 7')?.relation).toBe('inside');
    expect(overlappingPair(pairs, '/exports')).toMatchObject({ relation: 'contains', pair: { folder: '/exports/chair-1' } });
    expect(overlappingPair(pairs, '/')?.relation).toBe('contains');
  });

  it('lets neighbours and look-alike names be', () => {
    expect(overlappingPair(pairs, '/exports/chair-10')).toBeUndefined();
    expect(overlappingPair(pairs, '/exports/chair-1 old')).toBeUndefined();
    expect(overlappingPair(pairs, '/other')).toBeUndefined();
  });

  it('ignores case on Windows, where C:\\Scans and c:\\scans are one folder', () => {
    const windows = [pair('C:\\Scans\\Chair 1')];
    expect(overlappingPair(windows, 'c:\\scans\\chair 1', path.win32)?.relation).toBe('same');
    expect(overlappingPair(windows, 'C:\\SCANS', path.win32)?.relation).toBe('contains');
  });

  it('says which patient the folder already syncs to', () => {
    expect(describeOverlap('/exports', overlappingPair(pairs, '/exports')!)).toBe(
      "'/exports' holds '/exports/chair-1', which already syncs to Jane Roe (/scans). A folder can sync to one place only, so that each scan goes to one patient, once.",
    );
  });

  it('sees through links: a link to a synced folder, or into it, is that folder', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'pair-folders-'));
    try {
      mkdirSync(path.join(root, 'chair-2', 'case 1'), { recursive: true });
      symlinkSync(path.join(root, 'chair-2'), path.join(root, 'link'));
      const synced = [pair(path.join(root, 'chair-2'))];
      expect(overlappingPair(synced, path.join(root, 'link'), path, realFolder)?.relation).toBe('same');
      expect(overlappingPair(synced, path.join(root, 'link', 'case 1'), path, realFolder)?.relation).toBe('inside');
      expect(overlappingPair(synced, path.join(root, 'link'))).toBeUndefined();
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
