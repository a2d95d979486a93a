/**
 * Issue 2: random and hostile input at create and search — never a 500, never a crash, never a
 * document stored under a path or name the rules forbid.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { checkFileName, checkPath } from '../shared/names.js';
import { expectProblem, PATIENT, startTestServer, type TestServer } from './helpers/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => server.close());

const nasty = fc.constantFrom(
  '\u0000',
  '\u200f',
  '\u202e',
  '..',
  '.',
  '/',
  '//',
  '\\',
  '/a/../b',
  '/a/./b',
  ' ',
  '\t',
  '\n',
  'CON',
  'é',
  'e\u0301',
  '💥',
  '%2e%2e',
  '\ud800',
  'a'.repeat(300),
);
const hostileString = fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 20 }), nasty, fc.array(nasty, { maxLength: 5 }).map((parts) => parts.join('')));
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  fc.integer(),
  fc.double(),
  fc.constant(Number.MAX_SAFE_INTEGER),
  fc.constant(1e308),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 3 }),
);

function deepJson(depth: number): string {
  return `${'['.repeat(depth)}${']'.repeat(depth)}`;
}

describe('create under hostile input', () => {
  it('answers 201, 400 or 409 and stores only names and paths the rules allow', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({ fileName: hostileValue, path: fc.option(hostileValue, { nil: undefined }), fileType: fc.option(hostileValue, { nil: undefined }) }, { requiredKeys: [] }),
        async (body) => {
          const response = await server.api('POST', `/v1/patients/${PATIENT}/documents`, { body });
          expect([201, 400, 409]).toContain(response.status);
          if (response.status !== 201) {
            expect(response.body.messageKey).toBeTruthy();
            return;
          }
          const stored = (await server.api('POST', `/v1/patients/${PATIENT}/documents/search`, { body: { id: [response.body.id] } })).body.documents[0];
          const name = checkFileName(stored.fileName);
          const folder = checkPath(stored.path);
          expect(name.ok && name.value === stored.fileName).toBe(true);
          expect(folder.ok && folder.value === stored.path).toBe(true);
          expect(stored.path.split('/').includes('..')).toBe(false);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('survives bodies of the wrong shape and deep JSON', async () => {
    for (const body of ['[]', '"text"', '123', 'null', deepJson(5000), `{"fileName":${deepJson(2000)}}`, '{"fileName":"a.stl","path":{"$gt":""}}']) {
      const response = await server.api('POST', `/v1/patients/${PATIENT}/documents`, { body });
      expect(response.status).toBe(400);
    }
  });
});

describe('search under hostile input', () => {
  it('answers 200 or 400, never 500', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record(
          {
            offset: hostileValue,
            limit: hostileValue,
            path: hostileValue,
            hasContent: hostileValue,
            fileName: hostileValue,
            fileType: hostileValue,
            id: fc.oneof(hostileValue, fc.array(fc.uuid(), { minLength: 0, maxLength: 31 })),
            sortBy: fc.oneof(hostileValue, fc.constantFrom('lastModifiedAt', 'fileName', 'fileSize')),
            sortDirection: fc.oneof(hostileValue, fc.constantFrom('ASC', 'DESC')),
          },
          { requiredKeys: [] },
        ),
        async (body) => {
          const response = await server.api('POST', `/v1/patients/${PATIENT}/documents/search`, { body });
          expect([200, 400]).toContain(response.status);
          if (response.status === 200) expect(response.body.documents.length).toBeLessThanOrEqual(response.body.limit);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('accepts exactly 30 ids and refuses 31', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(fc.uuid(), { minLength: 30, maxLength: 31 }), async (ids) => {
        const response = await server.api('POST', `/v1/patients/${PATIENT}/documents/search`, { body: { id: ids } });
        expect(response.status).toBe(ids.length <= 30 ? 200 : 400);
      }),
      { numRuns: 10 },
    );
  });

  it('treats hostile URL paths and headers as client errors', async () => {
    const routes = [
      `/v1/patients/${'a'.repeat(5000)}/documents/search`,
      '/v1/patients/%00/documents/search',
      '/v1/patients/%E0%A4%A/documents/search',
    ];
    for (const route of routes) {
      // Refused by the router before any route runs, and still a problem document.
      expectProblem(await server.api('POST', route, { body: {} }), 400);
    }
  });
});
