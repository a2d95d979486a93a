import { describe, expect, it } from 'vitest';
import { startFailureMessage } from './bridge-error.js';

describe('the line shown when the app cannot start', () => {
  it('says a full disk in plain words, with what to do', () => {
    const full = Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
    expect(startFailureMessage(full)).toMatch(/^Patient Docs could not start: this computer’s disk is full\. Free some space/);
    const shm = Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR_SHMSIZE' });
    expect(startFailureMessage(shm)).toContain('disk is full');
  });

  it('passes anything else on as it is, for IT', () => {
    expect(startFailureMessage(new Error('EACCES: permission denied, open settings.json'))).toBe('Patient Docs could not start: EACCES: permission denied, open settings.json');
    expect(startFailureMessage('boom')).toBe('Patient Docs could not start: boom');
  });
});
