/**
 * The forms' own checks, worded for clinic staff and tied to a field, run before anything is sent.
 * The engine checks every call again (the renderer is untrusted); these only spare staff its
 * developer wording ("argument /0/serverUrl must NOT have fewer than 1 characters").
 */
import type { RemoteSetupInput } from '../../../shared/bridge.js';

export type FieldErrors<Field extends string> = Partial<Record<Field, string>>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function webAddress(value: string, what: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `Enter the ${what} in full, starting with https:// (for example https://docs.smile-clinic.example).`;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `The ${what} starts with https:// (or http://).`;
  return undefined;
}

export function validateRemoteSetup(input: RemoteSetupInput): FieldErrors<'serverUrl' | 'tokenUrl' | 'clientId' | 'clientSecret' | 'organizationId'> {
  const errors: FieldErrors<'serverUrl' | 'tokenUrl' | 'clientId' | 'clientSecret' | 'organizationId'> = {};
  const serverUrl = input.serverUrl.trim();
  if (!serverUrl) errors.serverUrl = 'Enter the server address your IT contact gave you.';
  else {
    const problem = webAddress(serverUrl, 'server address');
    if (problem) errors.serverUrl = problem;
  }
  const tokenUrl = input.tokenUrl?.trim();
  if (tokenUrl) {
    const problem = webAddress(tokenUrl, 'token address');
    if (problem) errors.tokenUrl = problem;
  }
  if (!input.clientId.trim()) errors.clientId = 'Enter the client ID.';
  if (!input.clientSecret) errors.clientSecret = 'Enter the client secret.';
  const organizationId = input.organizationId.trim();
  if (!organizationId) errors.organizationId = 'Enter the organization ID.';
  else if (!UUID.test(organizationId)) errors.organizationId = 'The organization ID is 36 characters, letters a–f, digits and dashes, like 0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01.';
  return errors;
}

export interface SettingsFields {
  concurrency: string;
  bandwidthMegabytes: string;
  webhookPort: string;
  webhookPublicUrl: string;
}

export function validateSettings(draft: SettingsFields): FieldErrors<keyof SettingsFields> {
  const errors: FieldErrors<keyof SettingsFields> = {};
  const concurrency = Number(draft.concurrency.trim());
  if (!draft.concurrency.trim() || !Number.isInteger(concurrency) || concurrency < 1 || concurrency > 16) errors.concurrency = 'Enter a whole number from 1 to 16.';
  const bandwidth = draft.bandwidthMegabytes.trim();
  if (bandwidth && !(Number(bandwidth.replace(',', '.')) >= 0)) errors.bandwidthMegabytes = 'Enter a speed in MB/s, such as 2.5, or leave it empty for no limit.';
  const port = draft.webhookPort.trim();
  if (port && !(Number.isInteger(Number(port)) && Number(port) >= 0 && Number(port) <= 65535)) errors.webhookPort = 'Enter a port from 1 to 65535, or leave it empty for any free port.';
  const publicUrl = draft.webhookPublicUrl.trim();
  if (publicUrl) {
    const problem = webAddress(publicUrl, 'public address');
    if (problem) errors.webhookPublicUrl = problem;
  }
  return errors;
}
