import { describe, expect, it } from 'vitest';
import { checkFileName, checkPath, checkPathFilter, foldKey, versionFileName, visibleName } from './names.js';

describe('name rules', () => {
  it('refuses bidirectional embedding, override and isolate controls, keeps right-to-left text and marks', () => {
    for (const control of ['\u202A', '\u202B', '\u202C', '\u202D', '\u202E', '\u2066', '\u2067', '\u2068', '\u2069']) {
      expect(checkFileName(`scan${control}fdp.exe`).ok).toBe(false);
      expect(checkPath(`/cases/a${control}b`).ok).toBe(false);
    }
    expect(checkFileName('\u05E6\u05D9\u05DC\u05D5\u05DD \u0661.stl')).toEqual({ ok: true, value: '\u05E6\u05D9\u05DC\u05D5\u05DD \u0661.stl' });
    expect(checkFileName('scan\u200F 1.stl').ok).toBe(true);
  });

  it('refuses names with nothing visible, lone surrogates and line separators; keeps joiners inside real names', () => {
    for (const blank of ['\u200B', '\u200D\u200C', '\uFEFF', '\u3164', '\u2800', ' \u00A0 ']) expect(checkFileName(blank)).toMatchObject({ ok: false, rule: expect.stringContaining('must not be blank') });
    for (const broken of ['x\ud800.pdf', 'x\udbff.pdf', '\udc00']) expect(checkFileName(broken)).toMatchObject({ ok: false, rule: expect.stringContaining('valid Unicode') });
    expect(checkPath('/a/\ud800').ok).toBe(false);
    expect(checkFileName('a\u2028b.pdf').ok).toBe(false);
    expect(checkFileName('\u{1F9B7}.stl')).toEqual({ ok: true, value: '\u{1F9B7}.stl' });
    expect(checkFileName('\u0646\u0627\u0645\u200C\u0647.pdf').ok).toBe(true);
    expect(checkFileName('\u{1F468}\u200D\u2695\uFE0F.pdf').ok).toBe(true);
  });

  it('applies the path length limit to the path as stored, without its trailing slash', () => {
    const longest = `/${Array.from({ length: 5 }, () => 'a'.repeat(200)).join('/')}/${'b'.repeat(18)}`;
    expect(longest).toHaveLength(1024);
    expect(checkPath(longest)).toEqual({ ok: true, value: longest });
    expect(checkPath(`${longest}/`)).toEqual({ ok: true, value: longest });
    expect(checkPath(`${longest}b`).ok).toBe(false);
  });

  it('folds case as Unicode does: final sigma, long s and the micro sign meet their plain letters, ß meets ss', () => {
    expect(foldKey('ΟΔΟΣ.pdf')).toBe(foldKey('οδοσ.pdf'));
    expect(foldKey('ΟΔΟΣ.pdf')).toBe(foldKey('οδος.pdf'));
    expect(foldKey('ſcan.STL')).toBe('scan.stl');
    expect(foldKey('5\u00b5m.stl')).toBe(foldKey('5\u03bcm.stl'));
    expect(foldKey('Zahnbu\u0308rste.PDF')).toBe('zahnbürste.pdf');
    expect(foldKey('Straße.pdf')).toBe(foldKey('STRASSE.pdf'));
    expect(foldKey('\u1E9Ee.pdf')).toBe(foldKey('sse.pdf'));
    // Case folding keeps the Turkish dotless ı apart from i (a different letter, not another case).
    expect(foldKey('\u0131.pdf')).not.toBe(foldKey('i.pdf'));
    expect(foldKey('\u13a0\u13f0.stl')).toBe(foldKey('\uab70\u13f8.stl'));
  });

  it('spells out what would hide or turn a name when it is shown', () => {
    expect(visibleName('scan\u202Efdp.exe')).toBe('scan⟨U+202E⟩fdp.exe');
    expect(visibleName('tab\there\u0000')).toBe('tab⟨U+0009⟩here⟨U+0000⟩');
    expect(visibleName('Zahnbürste \u05E6.pdf')).toBe('Zahnbürste \u05E6.pdf');
  });
});

describe('look-alike names', () => {
  const LOOK_ALIKES: Array<[string, string, string]> = [
    ['zero-width space', 'scan.stl', 'scan\u200B.stl'],
    ['soft hyphen', 'scan.stl', 'sc\u00ADan.stl'],
    ['word joiner', 'scan.stl', 'scan\u2060.stl'],
    ['byte-order mark', 'scan.stl', '\uFEFFscan.stl'],
    ['Hangul filler', 'scan.stl', 'scan\u3164.stl'],
    ['tag character', 'scan.stl', 'scan\u{E0041}.stl'],
    ['no-break space', 'scan 1.stl', 'scan\u00A01.stl'],
    ['ideographic space', 'scan 1.stl', 'scan\u30001.stl'],
    ['trailing dot', 'scan.stl', 'scan.stl.'],
    ['fullwidth letters', 'scan.stl', '\uFF53\uFF43\uFF41\uFF4E.stl'],
    ['ligature', 'office.pdf', 'o\uFB03ce.pdf'],
    ['ß and SS', 'Straße.pdf', 'STRASSE.pdf'],
    ['dotted capital I', '\u0130zmir.pdf', 'i\u0307zmir.pdf'],
    ['joiner between Latin letters', 'scan.stl', 'sc\u200Dan.stl'],
    ['right-to-left mark', 'scan 1.stl', 'scan\u200F 1.stl'],
    ['emoji presentation selector', '\u2695.pdf', '\u2695\uFE0F.pdf'],
  ];

  it.each(LOOK_ALIKES)('a %s never makes a second name: refused, or folded into the same key', (_what, plain, lookAlike) => {
    const check = checkFileName(lookAlike);
    if (check.ok) expect(foldKey(check.value)).toBe(foldKey(plain));
    else expect(check.rule).toMatch(/invisible character U\+[0-9A-F]{4,5}|must not end with '\.'/);
    // And where an older server stored it, its key meets the plain name's (the migration recomputes keys).
    expect(foldKey(lookAlike)).toBe(foldKey(plain));
  });

  it('names the invisible character it refuses, in names and in every segment of a path', () => {
    expect(checkFileName('scan\u200B.stl')).toEqual({ ok: false, rule: 'fileName must not contain the invisible character U+200B, which would make it look like another name' });
    expect(checkPath('/cases/a\u00ADb/c')).toMatchObject({ ok: false, rule: expect.stringContaining('U+00AD') });
    expect(checkPath('/cases./c')).toMatchObject({ ok: false, rule: "path segment must not end with '.'" });
    expect(checkFileName('scan\u{E0041}.stl')).toMatchObject({ ok: false, rule: expect.stringContaining('U+E0041') });
    expect(visibleName('scan\u200B.stl')).toBe('scan⟨U+200B⟩.stl');
  });

  it('still opens a folder stored before these rules: a search filter takes it and compares its key', () => {
    for (const stored of ['/cases./b', '/cases/a\u200Bb', '/\u200Dcases']) {
      const filter = checkPathFilter(stored);
      expect(filter).toEqual({ ok: true, value: stored });
      expect(checkPath(stored).ok).toBe(false);
    }
    expect(foldKey('/cases./b')).toBe('/cases/b');
    for (const refused of ['/a/../b', '/a/\u202Eb', '/a//b', 'a', '/a/ b']) expect(checkPathFilter(refused).ok).toBe(false);
  });

  it('keeps what real names need: joiners inside Persian and emoji, marks between words, but never at an edge', () => {
    expect(checkFileName('\u0646\u0627\u0645\u200C\u0647.pdf').ok).toBe(true);
    expect(checkFileName('\u{1F468}\u200D\u2695\uFE0F.pdf').ok).toBe(true);
    expect(checkFileName('\u200Dscan.stl')).toMatchObject({ ok: false, rule: expect.stringContaining('begin or end with an invisible joiner') });
    expect(checkFileName('scan.stl\u200E')).toMatchObject({ ok: false });
    expect(visibleName('\u{1F468}\u200D\u2695\uFE0F.pdf')).toBe('\u{1F468}\u200D\u2695\uFE0F.pdf');
    expect(checkFileName('.hidden').ok).toBe(true);
    expect(checkFileName('v1.2 scan.stl').ok).toBe(true);
  });
});

describe('versionFileName: the name an earlier version is saved under', () => {
  it('keeps the current version’s name and marks an earlier one before its extension', () => {
    expect(versionFileName('upper.stl', 3, true)).toBe('upper.stl');
    expect(versionFileName('upper.stl', 1, false)).toBe('upper (version 1).stl');
    expect(versionFileName('case.12.lower.ply', 2, false)).toBe('case.12.lower (version 2).ply');
    expect(versionFileName('README', 4, false)).toBe('README (version 4)');
    expect(versionFileName('.hidden', 5, false)).toBe('.hidden (version 5)');
  });
});
