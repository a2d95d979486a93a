import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.js';

function refusal(env: Record<string, string>): string {
  try {
    loadConfig(env, '/srv');
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(env)}`);
}

describe('server configuration', () => {
  it('takes the defaults of DESIGN §2 with no variables set', () => {
    expect(loadConfig({}, '/srv')).toMatchObject({ host: '127.0.0.1', port: 8080, webhookTimeoutMs: 10_000, webhookRetryDelaysMs: [900_000, 900_000, 900_000] });
  });

  it.each([
    [{ PATIENT_DOCS_WEBHOOK_TIMEOUT: '0' }, 'PATIENT_DOCS_WEBHOOK_TIMEOUT="0" must be between 100ms and 10m'],
    [{ PATIENT_DOCS_WEBHOOK_TIMEOUT: '600h' }, 'PATIENT_DOCS_WEBHOOK_TIMEOUT="600h" must be between 100ms and 10m'],
    [{ PATIENT_DOCS_WEBHOOK_TIMEOUT: 'soon' }, 'PATIENT_DOCS_WEBHOOK_TIMEOUT="soon" is not a duration'],
  ])('refuses %j with one line naming the variable', (env, message) => {
    const text = refusal(env);
    expect(text).toContain(message);
    expect(text).not.toContain('\n');
  });

  it('accepts timeouts at both ends of the range', () => {
    expect(loadConfig({ PATIENT_DOCS_WEBHOOK_TIMEOUT: '100ms' }, '/srv').webhookTimeoutMs).toBe(100);
    expect(loadConfig({ PATIENT_DOCS_WEBHOOK_TIMEOUT: '10m' }, '/srv').webhookTimeoutMs).toBe(600_000);
  });
});
