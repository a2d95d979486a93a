import { describe, expect, it } from 'vitest';
import { canTransition, FILE_STATES } from './states.js';

describe('file state rules', () => {
  it('lets a file only reach synced through verification (a lost scan also when its stored file is back on the server)', () => {
    const into = FILE_STATES.filter((from) => canTransition(from, 'synced'));
    expect(into).toEqual(['verifying', 'failed']);
  });

  it('lets every unfinished state fall back to queued, waiting or failed', () => {
    for (const from of ['creating', 'uploading', 'verifying', 'waiting'] as const) {
      expect([canTransition(from, 'queued'), canTransition(from, 'waiting'), canTransition(from, 'failed')]).toEqual([true, true, true]);
    }
  });

  it('leaves synced and failed files alone until they change or are retried (or, synced, the server lost them)', () => {
    expect(FILE_STATES.filter((to) => canTransition('failed', to))).toEqual(['queued', 'synced']);
    expect(FILE_STATES.filter((to) => canTransition('synced', to))).toEqual(['queued', 'failed']);
  });

  it('lets a queued file stay queued (with what the pipeline learned, e.g. its document is gone)', () => {
    expect(canTransition('queued', 'queued')).toBe(true);
  });

  it('resumes a waiting file at any working step', () => {
    expect(['creating', 'uploading', 'verifying'].every((to) => canTransition('waiting', to as 'creating'))).toBe(true);
  });
});
