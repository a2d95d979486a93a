import { describe, expect, it } from 'vitest';
import { foldForSearch, nameMatchesQuery } from './name-search.js';

describe('finding a patient by name as staff type it', () => {
  const names = ['Jane Pearson', 'John Pearson', 'Anna Müller', 'José García', "Siobhán O'Brien", 'Smith, John', 'Smith, Jon', 'Jörg Strauß'];
  const found = (query: string) => names.filter((name) => nameMatchesQuery(name, query));

  it('takes each word in any order, ignoring case, accents and punctuation', () => {
    expect(found('Jane Pearson')).toEqual(['Jane Pearson']);
    expect(found('pearson jane')).toEqual(['Jane Pearson']);
    expect(found('PEARSON')).toEqual(['Jane Pearson', 'John Pearson']);
    expect(found('muller')).toEqual(['Anna Müller']);
    expect(found('garcia')).toEqual(['José García']);
    expect(found('obrien')).toEqual(["Siobhán O'Brien"]);
    expect(found("o'brien siobhan")).toEqual(["Siobhán O'Brien"]);
    expect(found('smith j')).toEqual(['Smith, John', 'Smith, Jon']);
    expect(found('smith, john')).toEqual(['Smith, John']);
    expect(found('strauss')).toEqual(['Jörg Strauß']);
  });

  it('finds every name for a blank query and none for a word no name holds', () => {
    expect(found('  ')).toEqual(names);
    expect(found('pearson x')).toEqual([]);
  });

  it('folds compatibility forms and keeps letters of other scripts', () => {
    expect(foldForSearch('Ｍüller')).toBe('muller');
    expect(foldForSearch('Ωμέγα  Δέλτα')).toBe('ωμεγα δελτα');
  });
});
