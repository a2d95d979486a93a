import { describe, expect, it } from 'vitest';
import { contentDisposition, mediaTypeOf, parseRange } from './http-serving.js';

describe('parseRange', () => {
  it('serves one range, open-ended and suffix ranges, clamped to the size', () => {
    expect(parseRange('bytes=0-9', 100)).toEqual({ kind: 'partial', start: 0, end: 9 });
    expect(parseRange('bytes=90-', 100)).toEqual({ kind: 'partial', start: 90, end: 99 });
    expect(parseRange('bytes=-10', 100)).toEqual({ kind: 'partial', start: 90, end: 99 });
    expect(parseRange('bytes=-500', 100)).toEqual({ kind: 'partial', start: 0, end: 99 });
    expect(parseRange('bytes=50-5000', 100)).toEqual({ kind: 'partial', start: 50, end: 99 });
  });

  it('says unsatisfiable past the end, and ignores what it does not understand', () => {
    expect(parseRange('bytes=100-', 100)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=-0', 100)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=0-1,5-6', 100)).toEqual({ kind: 'whole' });
    expect(parseRange('items=0-1', 100)).toEqual({ kind: 'whole' });
    expect(parseRange('bytes=9-1', 100)).toEqual({ kind: 'whole' });
    expect(parseRange(undefined, 100)).toEqual({ kind: 'whole' });
  });
});

describe('contentDisposition', () => {
  it('carries UTF-8 names in filename* and a safe ASCII fallback', () => {
    expect(contentDisposition('Zahnbogen Müller "OK".stl')).toBe(
      `attachment; filename="Zahnbogen M_ller _OK_.stl"; filename*=UTF-8''Zahnbogen%20M%C3%BCller%20%22OK%22.stl`,
    );
    expect(contentDisposition("it's (1).pdf", 'inline')).toBe(`inline; filename="it's (1).pdf"; filename*=UTF-8''it%27s%20%281%29.pdf`);
  });
});

describe('mediaTypeOf', () => {
  it('knows the scan and document types and falls back to octet-stream', () => {
    expect(mediaTypeOf('PDF')).toBe('application/pdf');
    expect(mediaTypeOf('stl')).toBe('model/stl');
    expect(mediaTypeOf('BIN')).toBe('application/octet-stream');
  });
});
