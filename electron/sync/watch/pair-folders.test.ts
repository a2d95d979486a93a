import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeOverlap, forbiddenFolder, overlappingPair, realFolder } from './pair-folders.js';
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

describe('folders that are never scan folders', () => {
  const folders = { syncHome: '/home/ann/.config/patient-docs', serverData: '/home/ann/.config/patient-docs/server-data' };
  const same = (folder: string) => folder;

  it('refuses the sync home, anything in it and anything around it', () => {
    expect(forbiddenFolder('/home/ann/.config/patient-docs', folders, { canonical: same, platform: 'linux' })).toBe(
      "'/home/ann/.config/patient-docs' is the folder where Patient Docs keeps its settings, journal and secrets: it can never be a scan folder (its secrets would be uploaded). Choose the folder the scanner exports to.",
    );
    expect(forbiddenFolder('/home/ann/.config/patient-docs/Scans (demo)', folders, { canonical: same, platform: 'linux' })).toContain("is inside '/home/ann/.config/patient-docs'");
    expect(forbiddenFolder('/home/ann', folders, { canonical: same, platform: 'linux' })).toContain("'/home/ann' holds '/home/ann/.config/patient-docs', where Patient Docs keeps");
  });

  it("names the bundled server's data folder for a folder in it", () => {
    expect(forbiddenFolder('/home/ann/.config/patient-docs/server-data/files', folders, { canonical: same, platform: 'linux' })).toContain('where the bundled server keeps its database and stored files');
  });

  it('refuses the system folders of each platform, and lets ordinary folders be', () => {
    expect(forbiddenFolder('/proc/self', folders, { canonical: same, platform: 'linux' })).toContain("is inside the system folder '/proc'");
    expect(forbiddenFolder('/sys', folders, { canonical: same, platform: 'linux' })).toContain("is the system folder '/sys'");
    expect(forbiddenFolder('/dev/shm/scans', folders, { canonical: same, platform: 'linux' })).toContain("system folder '/dev'");
    expect(forbiddenFolder('/dev/fd', folders, { canonical: same, platform: 'darwin' })).toContain("system folder '/dev'");
    expect(forbiddenFolder('/.vol/1/2', folders, { canonical: same, platform: 'darwin' })).toContain("system folder '/.vol'");
    expect(forbiddenFolder('/srv/exports/chair-1', folders, { canonical: same, platform: 'linux' })).toBeUndefined();
    expect(forbiddenFolder('/home/ann/.config/patient-docs scans (demo)', folders, { canonical: same, platform: 'linux' })).toBeUndefined();
    expect(forbiddenFolder('/procedures', folders, { canonical: same, platform: 'linux' })).toBeUndefined();
  });

  it("refuses Windows devices and the app's folders whatever their case", () => {
    const windows = { syncHome: 'C:\\Users\\Ann\\AppData\\Roaming\\Patient Docs' };
    const options = { flavour: path.win32, canonical: same, platform: 'win32' as const };
    expect(forbiddenFolder('c:\\users\\ann\\appdata\\roaming\\patient docs\\x', windows, options)).toContain('is inside');
    expect(forbiddenFolder('\\\\.\\PhysicalDrive0', windows, options)).toContain('names a device of Windows');
    expect(forbiddenFolder('\\\\?\\GLOBALROOT\\Device\\HarddiskVolumeShadowCopy1', windows, options)).toContain('names a device of Windows');
    expect(forbiddenFolder('D:\\exports\\CON', windows, options)).toContain('names a device of Windows');
    expect(forbiddenFolder('\\\\?\\D:\\exports\\chair 1', windows, options)).toBeUndefined();
    expect(forbiddenFolder('\\\\fileserver\\scans\\chair 1', windows, options)).toBeUndefined();
    expect(forbiddenFolder('D:\\exports\\console', windows, options)).toBeUndefined();
  });

  it('follows links: a link that leads to the sync home or into /proc is refused, and says where it leads', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'pair-folders-'));
    try {
      const home = path.join(root, 'home');
      mkdirSync(home);
      symlinkSync(home, path.join(root, 'scans'));
      symlinkSync('/proc/self', path.join(root, 'self'));
      expect(forbiddenFolder(path.join(root, 'scans'), { syncHome: home }, { platform: 'linux' })).toContain(`(which leads to '${realFolder(home)}') is the folder where Patient Docs keeps`);
      expect(forbiddenFolder(path.join(root, 'self'), { syncHome: home }, { platform: 'linux' })).toContain("system folder '/proc'");
      expect(forbiddenFolder(path.join(root, 'scans'), { syncHome: path.join(root, 'other') }, { platform: 'linux' })).toBeUndefined();
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
