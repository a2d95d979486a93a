import { describe, expect, it } from 'vitest';
import { compareNatural, isDicomPart10, typeFromNameAndHead } from './dicom.js';

function part10(): Uint8Array {
  const head = new Uint8Array(200);
  head.set([0x44, 0x49, 0x43, 0x4d], 128);
  return head;
}

describe('DICOM Part-10 by its header', () => {
  it('finds "DICM" after the 128-byte preamble, and nowhere else', () => {
    expect(isDicomPart10(part10())).toBe(true);
    const early = new Uint8Array(200);
    early.set([0x44, 0x49, 0x43, 0x4d], 0);
    expect(isDicomPart10(early)).toBe(false);
    expect(isDicomPart10(part10().slice(0, 131))).toBe(false);
  });

  it('makes a file without a known extension DCM, and leaves a named type alone', () => {
    expect(typeFromNameAndHead('BIN', part10())).toBe('DCM');
    expect(typeFromNameAndHead('BIN', new Uint8Array(200))).toBe('BIN');
    expect(typeFromNameAndHead('STL', part10())).toBe('STL');
    expect(typeFromNameAndHead('BIN', null)).toBe('BIN');
  });

  it('sorts a series as a person counts: IM2 before IM10', () => {
    expect(['IM10', 'IM2', 'IM1', 'im3', 'IM100'].sort(compareNatural)).toEqual(['IM1', 'IM2', 'im3', 'IM10', 'IM100']);
  });
});
