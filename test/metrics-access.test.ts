/**
 * /metrics tells whoever reads it how busy a clinic is and whether its webhook receivers fail: it
 * is off unless PATIENT_DOCS_METRICS_TOKEN is set, and then answers only a bearer of that token.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { expectProblem, METRICS_TOKEN, startTestServer, type TestServer } from './helpers/server.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function read(headers: Record<string, string> = {}) {
  const response = await fetch(`${server!.url}/metrics`, { headers });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, body: text.startsWith('{') ? JSON.parse(text) : text };
}

describe('/metrics', () => {
  it('is off without PATIENT_DOCS_METRICS_TOKEN, whatever the request carries', async () => {
    server = await startTestServer();
    for (const headers of [{}, { authorization: `Bearer ${METRICS_TOKEN}` }] as Array<Record<string, string>>) {
      const answer = await read(headers);
      expect(answer.status).toBe(404);
      expect(expectProblem(answer, 404).detail).toMatch(/PATIENT_DOCS_METRICS_TOKEN/);
      expect(answer.text).not.toContain('patient_docs_webhook');
    }
  });

  it('answers only the bearer of the configured token', async () => {
    server = await startTestServer({ PATIENT_DOCS_METRICS_TOKEN: METRICS_TOKEN });
    const refusals: Array<Record<string, string>> = [{}, { authorization: 'Bearer wrong-token-0123456789' }, { authorization: `Bearer ${METRICS_TOKEN}x` }, { authorization: `Basic ${METRICS_TOKEN}` }];
    for (const headers of refusals) {
      const answer = await read(headers);
      expect(answer.status).toBe(401);
      expect(answer.text).not.toContain('patient_docs_webhook');
    }
    // An API token is not a metrics token.
    expect((await read({ authorization: `Bearer ${await server.token()}` })).status).toBe(401);
    const granted = await read({ authorization: `Bearer ${METRICS_TOKEN}` });
    expect(granted.status).toBe(200);
    expect(granted.text).toContain('patient_docs_webhook_messages{state="queued"} 0');
  });
});
