import { describe, expect, it } from 'vitest';
import { checkFileName, checkPath, visibleName } from './names.js';

describe('name rules', () => {
  it('refuses bidirectional embedding, override and isolate controls, keeps right-to-left text and marks', () => {
    for (const control of ['\u202A', '\u202B', '\u202C', '\u202D', '\u202E', '\u2066', '\u2067', '\u2068', '\u2069']) {
      expect(checkFileName(`scan${control}fdp.exe`).ok).toBe(false);
      expect(checkPath(`/cases/a${control}b`).ok).toBe(false);
    }
    expect(checkFileName('\u05E6\u05D9\u05DC\u05D5\u05DD \u0661.stl')).toEqual({ ok: true, value: '\u05E6\u05D9\u05DC\u05D5\u05DD \u0661.stl' });
    expect(checkFileName('scan\u200F 1.stl').ok).toBe(true);
  });

  it('spells out what would hide or turn a name when it is shown', () => {
    expect(visibleName('scan\u202Efdp.exe')).toBe('scan⟨U+202E⟩fdp.exe');
    expect(visibleName('tab\there\u0000')).toBe('tab⟨U+0009⟩here⟨U+0000⟩');
    expect(visibleName('Zahnbürste \u05E6.pdf')).toBe('Zahnbürste \u05E6.pdf');
  });
});
