import { describe, expect, it } from 'vitest';
import { isBirthDate, isIdentifierFilter, latestBirthDate, parseIdentifierFilter, readPatientSearch } from './patient-identifiers.js';

describe('patient identifiers and birth dates', () => {
  it('reads system|value at the first bar and refuses blank, padded or control-character parts', () => {
    expect(parseIdentifierFilter('chart|10231')).toEqual({ system: 'chart', value: '10231' });
    expect(parseIdentifierFilter('itero|ORD|7')).toEqual({ system: 'itero', value: 'ORD|7' });
    for (const bad of ['chart', '|1', 'chart|', ' chart|1', 'chart|1 ', 'chart|1\u0000', 'chart|\u202E1', `${'s'.repeat(65)}|1`, `chart|${'v'.repeat(129)}`]) {
      expect(isIdentifierFilter(bad), bad).toBe(false);
    }
  });

  it('takes a birth date that exists, from 1850 to today wherever the day has begun', () => {
    const now = new Date('2026-11-28T11:00:00Z'); // already 29 November in UTC+14
    expect(latestBirthDate(now)).toBe('2026-11-29');
    for (const good of ['1984-03-02', '2024-02-29', '1850-01-01', '2026-11-29']) expect(isBirthDate(good, now), good).toBe(true);
    for (const bad of ['2023-02-29', '1984-04-31', '1984-3-2', '1849-12-31', '2026-11-30', '84-03-02', '1984-03-02T00:00:00Z']) expect(isBirthDate(bad, now), bad).toBe(false);
  });

  it('reads a search box: a birth date in either notation, the rest as the name, a lone word with a digit as a chart number', () => {
    const now = new Date('2026-11-28T11:00:00Z');
    expect(readPatientSearch('smith j', { dayFirst: true, now })).toEqual({ name: 'smith j', birthDate: undefined, chart: undefined });
    expect(readPatientSearch('10231', { dayFirst: true, now })).toEqual({ name: '10231', birthDate: undefined, chart: '10231' });
    expect(readPatientSearch('#C-20417', { dayFirst: true, now })).toEqual({ name: '#C-20417', birthDate: undefined, chart: 'C-20417' });
    expect(readPatientSearch('1984-03-02', { dayFirst: false, now })).toEqual({ name: undefined, birthDate: '1984-03-02', chart: undefined });
    expect(readPatientSearch('Smith 02.03.1984', { dayFirst: true, now })).toEqual({ name: 'Smith', birthDate: '1984-03-02', chart: undefined });
    expect(readPatientSearch('03/02/1984 smith', { dayFirst: false, now })).toEqual({ name: 'smith', birthDate: '1984-03-02', chart: undefined });
    // Not a real day: it stays a word of the name.
    expect(readPatientSearch('31.02.1984', { dayFirst: true, now })).toEqual({ name: '31.02.1984', birthDate: undefined, chart: '31.02.1984' });
  });
});
