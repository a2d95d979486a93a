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

describe('look-alike names', () => {
  /** A character nobody sees, placed anywhere in a name or folder. */
  const invisible = fc.constantFrom('\u200B', '\u00AD', '\u2060', '\uFEFF', '\u180E', '\u2061', '\u3164', '\uFFA0', '\u034F', '\u{E0041}', '\uFE00', '\u{E0100}');
  /** Rewrites that look the same to a person and must meet the original's key. */
  const disguise = fc.constantFrom(
    (name: string) => name.replace(/ /g, '\u00A0'),
    (name: string) => name.replace(/[a-z]/g, (letter) => String.fromCodePoint(letter.codePointAt(0)! - 0x61 + 0xff41)),
    (name: string) => name.replace(/ffi/g, '\uFB03'),
    (name: string) => name.replace(/ss/g, 'ß'),
    (name: string) => name.toUpperCase(),
    (name: string) => name.replace(/İ/g, 'i\u0307'),
    (name: string) => name.replace(/İ/g, 'I\u0307'),
  );

  it('refuses a name or path with an invisible character, naming it as U+XXXX', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('fileName', 'path'), invisible, fc.nat({ max: 8 }), async (field, character, at) => {
        const plain = field === 'fileName' ? 'office scan.stl' : '/cases/office scan';
        const position = Math.min(at + 2, plain.length - 1);
        const value = `${plain.slice(0, position)}${character}${plain.slice(position)}`;
        const body = field === 'fileName' ? { fileName: value, path: '/look-alikes' } : { fileName: 'scan.stl', path: value };
        const problem = expectProblem(await server.api('POST', `/v1/patients/${PATIENT}/documents`, { body }), 400);
        expect(problem.detail).toContain(`U+${character.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`);
      }),
      { numRuns: 40 },
    );
  });

  it('stores one document per name a person would read as the same: the look-alike is a 409 clash', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('office scan.stl', 'Strasse İzmir.pdf', 'suffix ffi.ply'), disguise, fc.boolean(), async (name, rewrite, trailingDot) => {
        const folder = `/look-alikes/${Math.random().toString(36).slice(2)}`;
        const first = await server.api('POST', `/v1/patients/${PATIENT}/documents`, { body: { fileName: name, path: folder } });
        expect(first.status).toBe(201);
        const lookAlike = rewrite(name);
        const second = await server.api('POST', `/v1/patients/${PATIENT}/documents`, { body: { fileName: trailingDot ? `${lookAlike}.` : lookAlike, path: folder } });
        expect(second.status).toBe(trailingDot ? 400 : 409);
        const listed = await server.api('POST', `/v1/patients/${PATIENT}/documents/search`, { body: { path: folder } });
        expect(listed.body.documents.map((document: { fileName: string }) => document.fileName)).toEqual([name]);
      }),
      { numRuns: 30 },
    );
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
