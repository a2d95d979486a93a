import { describe, expect, it } from 'vitest';
import { createIgnoreMatcher } from './ignore.js';

describe('ignore rules', () => {
  const builtIn = createIgnoreMatcher();

  it('skips temporary, lock and system files whatever their case', () => {
    for (const path of ['~$report.docx', 'scan.TMP', 'case/jaw.stl.part', '.DS_Store', 'case/THUMBS.DB', 'Desktop.ini', 'x/.hidden.stl']) {
      expect(builtIn(path), path).toBe(true);
    }
  });

  it('skips everything inside a hidden folder', () => {
    expect(builtIn('.git/objects/ab')).toBe(true);
    expect(builtIn('case\\.cache\\series.dcm')).toBe(true);
  });

  it('uploads ordinary scans, including names that merely contain the temporary words', () => {
    for (const path of ['case/jaw.stl', 'tmp/report.pdf', 'series/IM0001', 'part.obj', 'a~$b.pdf', 'notes.tmp.pdf']) {
      expect(builtIn(path), path).toBe(false);
    }
  });

  it('adds user patterns: names at any depth, paths from the folder down, case-insensitive', () => {
    const ignored = createIgnoreMatcher(['*.bak', 'Old-Exports', '/raw/**', ' ']);
    expect(ignored('case/jaw.BAK')).toBe(true);
    expect(ignored('2026/old-exports/jaw.stl')).toBe(true);
    expect(ignored('RAW/series/IM0001')).toBe(true);
    expect(ignored('case/raw/IM0001')).toBe(false);
    expect(ignored('case/jaw.stl')).toBe(false);
  });

  it('matches a decomposed name on disk (macOS) with a pattern typed composed, and the other way round', () => {
    expect(createIgnoreMatcher(['M\u00fcller*'])('Mu\u0308ller-notes.pdf')).toBe(true);
    expect(createIgnoreMatcher(['Mu\u0308ller*'])('case/M\u00fcller-notes.pdf')).toBe(true);
  });
});
