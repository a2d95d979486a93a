// The renderer's form checks (renderer/src/forms/validate.ts): plain words, tied to a field, before anything is sent.
import { describe, expect, it } from 'vitest';
import { validateRemoteSetup, validateSettings } from '../renderer/src/forms/validate.js';

const setup = { serverUrl: 'https://docs.example', tokenUrl: '', clientId: 'scanner-pc-1', clientSecret: 'secret', organizationId: '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01' };
const settings = { concurrency: '4', bandwidthMegabytes: '', webhookPort: '', webhookPublicUrl: '' };

describe('the connection form’s checks', () => {
  it('accepts a complete form', () => {
    expect(validateRemoteSetup(setup)).toEqual({});
  });

  it('names each empty or malformed field in plain words, none of the schema’s', () => {
    const errors = validateRemoteSetup({ serverUrl: ' ', tokenUrl: 'token', clientId: '', clientSecret: '', organizationId: 'smile' });
    expect(Object.keys(errors).sort()).toEqual(['clientId', 'clientSecret', 'organizationId', 'serverUrl', 'tokenUrl']);
    expect(errors.serverUrl).toBe('Enter the server address your IT contact gave you.');
    expect(Object.values(errors).join(' ')).not.toMatch(/argument|must NOT|\/0\//);
    expect(validateRemoteSetup({ ...setup, serverUrl: 'docs.example' }).serverUrl).toMatch(/starting with https:\/\//);
  });
});

describe('the settings form’s checks', () => {
  it('accepts the defaults and an empty speed limit or port', () => {
    expect(validateSettings(settings)).toEqual({});
  });

  it('refuses 0, an empty or a fractional number of files at once, in words', () => {
    for (const concurrency of ['0', '', '2.5', '17']) expect(validateSettings({ ...settings, concurrency }).concurrency).toBe('Enter a whole number from 1 to 16.');
    expect(validateSettings({ ...settings, webhookPort: '70000' }).webhookPort).toMatch(/^Enter a port/);
  });
});
