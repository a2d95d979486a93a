import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { mapLocalFile, mapToRemote, serverNameKey, toRelativePath } from './mapping.js';

const pair = { folder: '/home/clinic/scans', remoteBasePath: '/Scans/Intraoral' };

describe('local file to server location', () => {
  it('maps a file in a sub-folder under the base path and keeps its name', () => {
    expect(mapLocalFile(pair, '/home/clinic/scans/2026-11/case 7/Upper Jaw.stl')).toEqual({
      ok: true,
      relativePath: '2026-11/case 7/Upper Jaw.stl',
      remotePath: '/Scans/Intraoral/2026-11/case 7',
      fileName: 'Upper Jaw.stl',
    });
  });

  it('puts a file at the top of the folder directly under the base path', () => {
    expect(mapToRemote({ remoteBasePath: '/' }, 'report.pdf')).toMatchObject({ ok: true, remotePath: '/', fileName: 'report.pdf' });
    expect(mapToRemote({ remoteBasePath: '/Scans/' }, 'report.pdf')).toMatchObject({ ok: true, remotePath: '/Scans' });
  });

  it('reads Windows paths with backslashes', () => {
    const windowsPair = { folder: 'C:\\Scanner\\Export', remoteBasePath: '/Scans' };
    expect(mapLocalFile(windowsPair, 'C:\\Scanner\\Export\\Case 7\\jaw.stl', path.win32)).toMatchObject({
      ok: true,
      relativePath: 'Case 7/jaw.stl',
      remotePath: '/Scans/Case 7',
      fileName: 'jaw.stl',
    });
  });

  it('keeps a decomposed (macOS) name as on disk, to open it by, and gives the server its composed form', () => {
    const decomposed = 'Mu\u0308ller/Ro\u0308ntgen.pdf';
    const mapped = mapLocalFile(pair, `/home/clinic/scans/${decomposed}`);
    expect(mapped).toMatchObject({ ok: true, relativePath: decomposed, remotePath: '/Scans/Intraoral/M\u00fcller', fileName: 'R\u00f6ntgen.pdf' });
  });

  it('gives one server-name key to names the server holds as one (NFC and NFD, upper and lower case), another to other names', () => {
    expect(serverNameKey('Mu\u0308ller/Ro\u0308ntgen.pdf')).toBe(serverNameKey('M\u00fcller/R\u00f6ntgen.pdf'));
    expect(serverNameKey('CASE 7/Jaw.STL')).toBe(serverNameKey('case 7/jaw.stl'));
    expect(serverNameKey('case 7/jaw.stl')).not.toBe(serverNameKey('case 8/jaw.stl'));
  });

  it('explains in plain words which folder or file name the server would refuse', () => {
    const folder = mapToRemote(pair, 'case 7 /jaw.stl');
    expect(folder).toEqual({
      ok: false,
      relativePath: 'case 7 /jaw.stl',
      reason: "The folder name 'case 7 ' cannot be used on the server: it must not begin or end with spaces.",
    });
    const file = mapToRemote(pair, 'case/jaw\\upper.stl');
    expect(file.ok).toBe(false);
    expect(file.ok ? '' : file.reason).toBe("The file name 'jaw\\upper.stl' cannot be used on the server: it must not contain '/' or '\\'.");
  });

  it('refuses a name with a bidirectional override, and spells the character out in the reason', () => {
    const spoof = mapToRemote(pair, 'case/scan\u202Efdp.exe');
    expect(spoof.ok).toBe(false);
    // Shown raw, the reason itself would display reversed after the name.
    expect(spoof.ok ? '' : spoof.reason).toBe(
      "The file name 'scan⟨U+202E⟩fdp.exe' cannot be used on the server: it must not contain bidirectional control characters (U+202A–U+202E, U+2066–U+2069), which make a name display as another.",
    );
    expect(mapToRemote(pair, 'case/\u05E6\u05D9\u05DC\u05D5\u05DD\u200F 1.stl').ok).toBe(true);
  });

  it('refuses, as the server does, a name with an invisible character or a trailing dot, and spells the character out', () => {
    const hidden = mapToRemote(pair, 'case/scan\u200B.stl');
    expect(hidden.ok ? '' : hidden.reason).toBe(
      "The file name 'scan⟨U+200B⟩.stl' cannot be used on the server: it must not contain the invisible character U+200B, which would make it look like another name.",
    );
    const folder = mapToRemote(pair, 'case\u00AD 7/scan.stl');
    expect(folder.ok ? '' : folder.reason).toMatch(/^The folder name 'case⟨U\+00AD⟩ 7' cannot be used on the server: .*U\+00AD/);
    expect(mapToRemote(pair, 'case/scan.stl.')).toMatchObject({ ok: false, reason: "The file name 'scan.stl.' cannot be used on the server: it must not end with '.'." });
  });

  it('gives one server-name key to look-alike names the server holds as one (fullwidth, ligature, ß and SS, no-break space)', () => {
    expect(serverNameKey('case 7/\uFF53\uFF43\uFF41\uFF4E.stl')).toBe(serverNameKey('case 7/scan.stl'));
    expect(serverNameKey('o\uFB03ce/Straße.pdf')).toBe(serverNameKey('office/STRASSE.pdf'));
    expect(serverNameKey('case\u00A07/scan.stl')).toBe(serverNameKey('case 7/scan.stl'));
  });

  it('refuses a path that would be too long on the server', () => {
    const deep = Array.from({ length: 6 }, () => 'f'.repeat(200)).join('/');
    const mapped = mapToRemote(pair, `${deep}/jaw.stl`);
    expect(mapped.ok ? '' : mapped.reason).toMatch(/^The folder path '.*' cannot be used on the server: it must be at most 1024 characters\.$/);
  });

  it('reports a broken base path of the pair instead of guessing', () => {
    const mapped = mapToRemote({ remoteBasePath: 'Scans' }, 'jaw.stl');
    expect(mapped.ok ? '' : mapped.reason).toBe("The server folder 'Scans' set for this sync folder is not valid: it must begin with '/'.");
  });

  it('refuses a path outside the sync folder', () => {
    expect(() => toRelativePath('/home/clinic/scans', '/home/clinic/other/jaw.stl')).toThrow(/not inside the sync folder/);
    expect(toRelativePath('/home/clinic/scans', '/home/clinic/scans/..old/jaw.stl')).toBe('..old/jaw.stl');
  });
});
