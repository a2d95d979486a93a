/**
 * Every route the server documents, under random and hostile requests: whatever a client sends,
 * the answer is never a 5xx, and every refusal is a problem-details body (SPEC §7) — or, at the
 * token endpoint, an RFC 6749 error body. The routes come from the server's own OpenAPI document,
 * so a route added later is covered without touching this test.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ADMIN_TOKEN, ORG, OTHER_ORG, PATIENT, PATIENT_WITHOUT_CONSENT, TEST_DEPLOYMENT, startTestServer, type TestServer } from './helpers/server.js';

let server: TestServer;
let operations: { method: string; template: string }[];
let clientToken: string;
let documentId: string;

beforeAll(async () => {
  server = await startTestServer({ PATIENT_DOCS_WEBHOOK_RETRY_DELAYS: '1s' });
  clientToken = await server.token();
  const created = await server.api('POST', `/v1/patients/${PATIENT}/documents`, { body: { fileName: 'scan.stl', path: '/fuzz' } });
  documentId = created.body.id;
  const openapi = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
  operations = Object.entries(openapi.paths).flatMap(([template, methods]) =>
    Object.keys(methods)
      .filter((method) => ['get', 'post', 'put', 'patch', 'delete', 'head'].includes(method))
      .map((method) => ({ method: method.toUpperCase(), template })),
  );
});
afterAll(async () => server.close());

const nasty = fc.constantFrom('\u0000', '\u202e', '..', '/a/../b', '//', '\\', '%00', '%E0%A4%A', 'é', '💥', ' ', '-1', '1e309', 'a'.repeat(2000), 'null');
const hostileString = fc.oneof(fc.string({ maxLength: 30 }), nasty, fc.uuid());
const hostileValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    hostileString,
    fc.integer(),
    fc.double(),
    fc.constantFrom(Number.MAX_SAFE_INTEGER, -1, 0, 1e308, true, false, null),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('__proto__', 'constructor', 'fileName', 'path', 'events', 'callbackUrl', 'hmac', 'name', 'organizations', 'consents', 'scopes', 'patientId', 'status')), tie('value'), { maxKeys: 4 }),
  ),
})).value;

const headerSafe = fc.string({ maxLength: 30 }).filter((value) => /^[\t\x20-\x7e]*$/.test(value));

/** A value for one path parameter: a real id that the server knows, or something hostile. */
const pathValue = fc.oneof(
  fc.constantFrom(PATIENT, PATIENT_WITHOUT_CONSENT, ORG, OTHER_ORG, 'not-a-uuid', '00000000-0000-0000-0000-000000000000', 'missing-problem'),
  hostileString.map((value) => encodeURIComponent(value)),
);

const request = fc.record({
  operation: fc.nat(),
  params: fc.array(pathValue, { minLength: 4, maxLength: 4 }),
  useDocument: fc.boolean(),
  body: fc.option(fc.oneof(hostileValue.map((value) => JSON.stringify(value) ?? 'null'), fc.constantFrom('{', '{"a":', '[]', '', '\u0000', '{"fileName":"x.stl"}')), { nil: undefined }),
  contentType: fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded', 'application/offset+octet-stream', 'multipart/form-data; boundary=x', 'application/octet-stream'),
  query: fc.array(fc.tuple(fc.constantFrom('name', 'offset', 'limit', 'status', 'v', 'expires', 'sig', 'disposition', 'x'), hostileString), { maxLength: 4 }),
  organization: fc.oneof(fc.constantFrom(ORG, OTHER_ORG, 'bad'), headerSafe),
  tusHeaders: fc.boolean(),
  // Mostly the right credentials; sometimes Basic with hostile content, or garbage.
  authorization: fc.oneof(
    { weight: 6, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.tuple(hostileString, hostileString).map(([id, secret]) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`) },
    { weight: 1, arbitrary: fc.oneof(headerSafe, fc.constantFrom('Basic', 'Basic !!!', 'Bearer', 'Bearer a.b.c', 'Basic JUUwOiVFMA==')) },
  ),
  // Headers some routes read (ranges, encodings, tus), with values a client may get wrong.
  headers: fc.dictionary(
    fc.constantFrom('range', 'accept-encoding', 'accept', 'upload-offset', 'upload-length', 'upload-defer-length', 'upload-metadata', 'upload-concat', 'tus-resumable', 'if-none-match', 'x-http-method-override'),
    fc.oneof(fc.constantFrom('bytes=0-', 'bytes=-1', 'bytes=5-2', 'bytes=0-0,2-3', 'bytes=99999999999999999999-', 'gzip;q=0', '*', '-1', '1e3', '18446744073709551616', 'filename', 'filename eA==,filename eA==', 'final;a b', '0.9.0', 'DELETE'), headerSafe),
    { maxKeys: 3 },
  ),
});

describe('every documented route under hostile input', () => {
  it('never answers 5xx, and refuses with a problem-details body', async () => {
    expect(operations.length).toBeGreaterThan(30);
    const seen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(request, async (input) => {
        const operation = operations[input.operation % operations.length]!;
        let index = 0;
        const route = operation.template.replace(/\{[^}]+\}/g, (name) => (name === '{documentId}' && input.useDocument ? documentId : input.params[index++ % 4]!));
        const query = new URLSearchParams(input.query).toString();
        const headers: Record<string, string> = {
          authorization: `Bearer ${route.startsWith('/admin/') ? ADMIN_TOKEN : clientToken}`,
          'organization-id': input.organization,
        };
        if (input.tusHeaders) Object.assign(headers, { 'tus-resumable': '1.0.0', 'upload-length': '10', 'upload-offset': '0', 'upload-metadata': 'filename eA==' });
        Object.assign(headers, input.headers);
        if (input.authorization !== undefined) headers.authorization = input.authorization;
        const hasBody = input.body !== undefined && !['GET', 'HEAD'].includes(operation.method);
        if (hasBody) headers['content-type'] = input.contentType;
        const response = await fetch(`${server.url}${route}${query ? `?${query}` : ''}`, {
          method: operation.method,
          headers,
          body: hasBody ? input.body : undefined,
          redirect: 'manual',
        });
        const text = await response.text();
        const what = `${operation.method} ${route} → ${response.status} ${text.slice(0, 300)}`;
        seen.add(`${operation.method} ${operation.template}`);
        expect(response.status, what).toBeLessThan(500);
        if (response.status < 400 || operation.method === 'HEAD') return;
        // Behind nginx (the `deployment` project), a request line nginx refuses itself (a NUL in the
        // path) gets nginx's own 400 page: no instance ever sees it.
        if (TEST_DEPLOYMENT === 'nginx' && response.status === 400 && response.headers.get('content-type')?.startsWith('text/html') && /%00/i.test(route)) return;
        const body = JSON.parse(text) as Record<string, unknown>;
        if (route.startsWith('/oauth2/token')) {
          expect(typeof body.error, what).toBe('string');
          return;
        }
        expect(response.headers.get('content-type'), what).toMatch(/^application\/problem\+json/);
        expect(body.status, what).toBe(response.status);
        expect(typeof body.messageKey, what).toBe('string');
      }),
      { numRuns: Number(process.env.FUZZ_RUNS ?? 600) },
    );
    // The runs reached most of the documented operations, not just a few.
    expect(seen.size).toBeGreaterThan(operations.length * 0.8);
  }, 120_000);
});
