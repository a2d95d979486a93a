/** Issue 2: token → create → search over real HTTP, every rule of SPEC §4.1/§4.3 and DESIGN §3. */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { CLIENT, ORG, PATIENT, READ_ONLY_CLIENT, ADMIN_TOKEN, expectProblem, startTestServer, type TestServer } from './helpers/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => server.close());

const documentsRoute = `/v1/patients/${PATIENT}/documents`;
/** Node's client for a URL: http, or https behind the deployment's nginx (test/helpers/deployment.ts). */
const request = (url: string, options: http.RequestOptions, onResponse?: (response: http.IncomingMessage) => void): http.ClientRequest =>
  (url.startsWith('https:') ? https : http).request(url, options, onResponse);
const searchRoute = `${documentsRoute}/search`;

describe('identity provider', () => {
  it('issues an RS256 JWT with the claims of SPEC §5.5, valid 1800 s', async () => {
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret, scope: 'api://patient-docs/.default' });
    const response = await fetch(`${server.url}/oauth2/token`, { method: 'POST', body: form });
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = (await response.json()) as { token_type: string; expires_in: number; access_token: string };
    expect(body.token_type).toBe('Bearer');
    expect(body.expires_in).toBe(1800);
    const claims = decodeJwt(body.access_token);
    expect(decodeProtectedHeader(body.access_token).alg).toBe('RS256');
    expect(claims).toMatchObject({ aud: 'api://patient-docs', iss: server.url, azp: CLIENT.id, sub: CLIENT.id, oid: CLIENT.id, ver: '2.0', azpacr: '1' });
    expect(claims.exp! - claims.iat!).toBe(1800);
    expect(claims.nbf).toBe(claims.iat);
    expect(typeof claims.tid).toBe('string');
    expect(typeof claims.ipaddr).toBe('string');
    expect(String(claims.scp).split(' ').sort()).toEqual(['Patient.File.Read', 'Patient.File.Write', 'Patient.Read', 'Webhook.Manage']);
  });

  it('accepts client_secret_basic and a scope subset', async () => {
    const basic = Buffer.from(`${CLIENT.id}:${CLIENT.secret}`).toString('base64');
    const response = await fetch(`${server.url}/oauth2/token`, {
      method: 'POST',
      headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials&scope=Patient.File.Read',
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { access_token: string; scope: string };
    expect(decodeJwt(body.access_token).scp).toBe('Patient.File.Read');
  });

  it('refuses client_secret_basic whose form names another client_id (400 invalid_request), and takes the same one', async () => {
    const basic = Buffer.from(`${CLIENT.id}:${CLIENT.secret}`).toString('base64');
    const post = (clientId: string) =>
      fetch(`${server.url}/oauth2/token`, {
        method: 'POST',
        headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: `grant_type=client_credentials&client_id=${clientId}`,
      });
    const other = await post(READ_ONLY_CLIENT.id);
    expect(other.status).toBe(400);
    expect(await other.json()).toEqual({ error: 'invalid_request', error_description: 'client_id in the form does not match the client of the Basic authorization header' });
    const same = await post(CLIENT.id);
    expect(same.status).toBe(200);
    expect(decodeJwt(((await same.json()) as { access_token: string }).access_token).azp).toBe(CLIENT.id);
  });

  it.each([
    ['not valid percent-encoding', `${CLIENT.id}:100%-secret`, 400, 'invalid_request'],
    ['no colon', CLIENT.id, 400, 'invalid_request'],
    ['a wrong secret', `${CLIENT.id}:wrong`, 401, 'invalid_client'],
  ])('answers client_secret_basic with %s (%s) as RFC 6749 %i %s', async (_label, credentials, status, error) => {
    const response = await fetch(`${server.url}/oauth2/token`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(credentials).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials',
    });
    expect(response.status).toBe(status);
    expect(((await response.json()) as { error: string }).error).toBe(error);
  });

  it.each([
    ['a wrong secret', { grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: 'wrong' }, 401, 'invalid_client'],
    ['an unknown client', { grant_type: 'client_credentials', client_id: 'nobody', client_secret: 'x' }, 401, 'invalid_client'],
    ['no grant_type', { client_id: CLIENT.id, client_secret: CLIENT.secret }, 400, 'invalid_request'],
    ['another grant type', { grant_type: 'password', client_id: CLIENT.id, client_secret: CLIENT.secret }, 400, 'unsupported_grant_type'],
    ['a scope not granted', { grant_type: 'client_credentials', client_id: READ_ONLY_CLIENT.id, client_secret: READ_ONLY_CLIENT.secret, scope: 'Patient.File.Write' }, 400, 'invalid_scope'],
    ['no client_id', { grant_type: 'client_credentials' }, 400, 'invalid_request'],
  ])('answers %s with RFC 6749 error %i %s', async (_label, form, status, error) => {
    const response = await fetch(`${server.url}/oauth2/token`, { method: 'POST', body: new URLSearchParams(form as Record<string, string>) });
    expect(response.status).toBe(status);
    expect(((await response.json()) as { error: string }).error).toBe(error);
  });

  it.each([
    ['JSON', 'application/json', '{}'],
    ['broken JSON', 'application/json', '{"grant_type":'],
    ['text', 'text/plain', 'grant_type=client_credentials'],
    ['an octet stream', 'application/offset+octet-stream', 'x'],
  ])('refuses a token request sent as %s with an RFC 6749 invalid_request, not a problem document', async (_label, contentType, body) => {
    const response = await fetch(`${server.url}/oauth2/token`, { method: 'POST', headers: { 'content-type': contentType }, body });
    expect(response.status).toBe(400);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(((await response.json()) as { error: string }).error).toBe('invalid_request');
  });

  it('answers a repeated parameter and an oversized token request in RFC 6749 shape, never cached', async () => {
    const repeated = await fetch(`${server.url}/oauth2/token`, {
      method: 'POST',
      body: `grant_type=client_credentials&client_id=${CLIENT.id}&client_secret=${CLIENT.secret}&client_id=${READ_ONLY_CLIENT.id}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(repeated.status).toBe(400);
    expect(await repeated.json()).toEqual({ error: 'invalid_request', error_description: 'client_id must not be sent more than once' });
    expect(repeated.headers.get('pragma')).toBe('no-cache');
    const oversized = await fetch(`${server.url}/oauth2/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret, pad: 'x'.repeat(17 * 1024) }),
    });
    expect(oversized.status).toBe(413);
    expect(oversized.headers.get('content-type')).toMatch(/^application\/json/);
    expect(((await oversized.json()) as { error: string }).error).toBe('invalid_request');
  });

  it('publishes discovery and JWKS', async () => {
    const discovery = (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(discovery).toMatchObject({ issuer: server.url, token_endpoint: `${server.url}/oauth2/token`, jwks_uri: `${server.url}/.well-known/jwks.json` });
    const jwks = (await (await fetch(`${server.url}/.well-known/jwks.json`)).json()) as { keys: Array<Record<string, unknown>> };
    expect(jwks.keys[0]).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig' });
    expect(jwks.keys[0]).not.toHaveProperty('d');
  });
});

describe('create document placeholder (SPEC §4.1)', () => {
  it('creates at the root and inside a path, normalising the path', async () => {
    const root = await server.api('POST', documentsRoute, { body: { fileName: 'consent-form.pdf' } });
    expect(root.status).toBe(201);
    expect(root.body).toMatchObject({ path: '/', fileName: 'consent-form.pdf', fileType: 'PDF' });
    expect(root.body.storageUrl).toBe(`${server.url}/storage/v1/documents/${root.body.id}`);
    const nested = await server.api('POST', documentsRoute, { body: { fileName: 'upper.stl', path: '/Cases/2026-11/Scan 1/' } });
    expect(nested.status).toBe(201);
    expect(nested.body.path).toBe('/Cases/2026-11/Scan 1');
    expect(nested.body.fileType).toBe('STL');
  });

  it('stores names in NFC and treats case and normalisation variants as the same document (409)', async () => {
    const decomposed = 'Zahnbu\u0308rste.pdf';
    const first = await server.api('POST', documentsRoute, { body: { fileName: decomposed, path: '/nfc' } });
    expect(first.status).toBe(201);
    const search = await server.api('POST', searchRoute, { body: { id: [first.body.id] } });
    expect(search.body.documents[0].fileName).toBe('Zahnbürste.pdf'.normalize('NFC'));
    const clash = await server.api('POST', documentsRoute, { body: { fileName: 'ZAHNBÜRSTE.PDF', path: '/NFC/' } });
    const problem = expectProblem(clash, 409);
    expect(problem.messageKey).toBe('CONFLICT');
    expect((await server.api('POST', documentsRoute, { body: { fileName: 'ΟΔΟΣ.pdf', path: '/Σπίτι' } })).status).toBe(201);
    expectProblem(await server.api('POST', documentsRoute, { body: { fileName: 'οδοσ.pdf', path: '/ΣΠΊΤΙ' } }), 409);
  });

  it.each([
    [{ fileName: '' }, 'fileName must not be blank'],
    [{ fileName: '   ' }, 'fileName must not be blank'],
    [{ fileName: '\u200B' }, 'fileName must not be blank (it has no visible character)'],
    [{ fileName: '\u3164\u2800' }, 'fileName must not be blank'],
    [{ fileName: 'x\ud800.pdf' }, 'fileName must be valid Unicode text'],
    [{ fileName: 'a.stl', path: '/cases/\udfff' }, 'path segment must be valid Unicode text'],
    [{ fileName: 'two\u2028lines.pdf' }, 'control characters'],
    [{ fileName: 'a/b.stl' }, "must not contain '/'"],
    [{ fileName: '..' }, "must not be '.' or '..'"],
    [{ fileName: ' lead.stl' }, 'must not begin or end with spaces'],
    [{ fileName: 'nul\u0000.stl' }, 'control characters'],
    [{ fileName: 'scan\u202Efdp.exe' }, 'fileName must not contain bidirectional control characters'],
    [{ fileName: 'a.stl', path: '/cases/\u2067x' }, 'path segment must not contain bidirectional control characters'],
    [{ fileName: 'x'.repeat(256) }, 'at most 255'],
    [{ fileName: 'a.stl', path: 'relative' }, "must begin with '/'"],
    [{ fileName: 'a.stl', path: '/a//b' }, 'empty segments'],
    [{ fileName: 'a.stl', path: '/a/../b' }, "must not be '.' or '..'"],
    [{ fileName: 'a.stl', path: '/a\\b' }, "must not contain '/' or '\\'"],
    [{ fileName: 'a.stl', path: `/${'a'.repeat(1030)}` }, 'at most 1024'],
    [{ fileName: 'a.stl', path: `/${'a'.repeat(1024)}/` }, 'at most 1024'],
    [{ fileName: 42 }, 'body/fileName must be string'],
    [{}, 'body/fileName is required'],
  ])('refuses %j with 400 naming the rule', async (body, rule) => {
    const problem = expectProblem(await server.api('POST', documentsRoute, { body }), 400);
    expect(problem.messageKey).toBe('VALIDATION_ERROR');
    expect(problem.detail).toContain(rule);
  });

  it('refuses a body that is not UTF-8 and names a __proto__ key as the rule, instead of storing U+FFFD or saying "not JSON"', async () => {
    const latin1 = Buffer.concat([Buffer.from('{"fileName":"bad'), Buffer.from([0xff]), Buffer.from('.pdf"}')]);
    expect(expectProblem(await server.api('POST', documentsRoute, { body: latin1 }), 400).detail).toBe('body must be UTF-8 encoded text');
    const poisoned = expectProblem(await server.api('POST', documentsRoute, { body: '{"fileName":"a.pdf","__proto__":{"x":1}}' }), 400);
    expect(poisoned.detail).toBe('body must not contain a "__proto__" or "constructor.prototype" key');
    const search = await server.api('POST', searchRoute, { body: { fileName: 'bad' } });
    expect(search.body.documents.filter((document: { fileName: string }) => document.fileName.includes('\uFFFD'))).toEqual([]);
  });

  it('answers an Organization-ID or patient id with a urn:uuid: prefix with 400, not 403 or 404', async () => {
    const header = expectProblem(await server.api('POST', searchRoute, { body: {}, organization: `urn:uuid:${ORG}` }), 400);
    expect(header.detail).toContain('must be a UUID');
    expectProblem(await server.api('POST', `/v1/patients/urn:uuid:${PATIENT}/documents/search`, { body: {} }), 400);
  });

  it('answers headers over the limit and bytes that are not HTTP with problem details (413, 400), then closes', async () => {
    const exchange = (raw: string) =>
      new Promise<string>((resolve, reject) => {
        // The server's own socket (behind nginx, an instance's): what nginx makes of such bytes is nginx's own page.
        const socket = net.connect(Number(new URL(server.server.url).port), '127.0.0.1', () => socket.end(raw));
        let text = '';
        socket.setEncoding('utf8').on('data', (chunk) => (text += chunk)).on('close', () => resolve(text)).on('error', reject);
      });
    const huge = await exchange(`POST ${searchRoute} HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(huge).toMatch(/^HTTP\/1\.1 413 /);
    expect(huge).toContain('Content-Type: application/problem+json');
    expect(JSON.parse(huge.slice(huge.indexOf('\r\n\r\n') + 4))).toMatchObject({ status: 413, messageKey: 'PAYLOAD_TOO_LARGE' });
    const garbage = await exchange('HELLO\r\n\r\n');
    expect(garbage).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(garbage.slice(garbage.indexOf('\r\n\r\n') + 4))).toMatchObject({ status: 400, messageKey: 'VALIDATION_ERROR' });
  });

  it('answers malformed JSON, a wrong content type and an oversized body with problem details', async () => {
    expectProblem(await server.api('POST', documentsRoute, { body: '{"fileName":' }), 400);
    const wrongType = expectProblem(await server.api('POST', documentsRoute, { body: 'fileName=a', headers: { 'content-type': 'text/plain' } }), 415);
    expect(wrongType.detail).toBe('unsupported Content-Type: "text/plain"');
    expectProblem(await server.api('POST', documentsRoute, { body: { fileName: 'a.stl', padding: 'x'.repeat(2 * 1024 * 1024) } }), 413);
  });

  it('takes Content-Type: application/json without a body on routes that take none, and still refuses it where a body is required', async () => {
    const created = await server.api('POST', documentsRoute, { body: { fileName: 'json-header.stl', path: '/json-header' } });
    const jsonHeader = { 'content-type': 'application/json' };
    const removed = await fetch(`${server.url}${documentsRoute}/${created.body.id}`, { method: 'DELETE', headers: { ...jsonHeader, authorization: `Bearer ${await server.token()}`, 'organization-id': ORG } });
    expect(removed.status).toBe(204);
    const consent = await fetch(`${server.url}/admin/v1/patients/${PATIENT}/consents/${ORG}`, { method: 'PUT', headers: { ...jsonHeader, authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(consent.status).toBe(200);
    expect(expectProblem(await server.api('POST', documentsRoute, { body: '' }), 400).detail).toBe('body must not be empty when Content-Type is application/json');
  });

  it('shows the problem instance as the request path and keeps 500s free of internals', async () => {
    const problem = expectProblem(await server.api('POST', documentsRoute, { body: {} }), 400);
    expect(problem.instance).toBe(documentsRoute);
    expect(problem.type).toMatch(/\/problems\/validation-error$/);
    expect(new Date(problem.occurredAt).toISOString()).toBe(problem.occurredAt);
  });
});

describe('search (SPEC §4.3, DESIGN §3)', () => {
  const patientRoute = (suffix = '') => `/v1/patients/5f0e8a3c-1d2b-4c3d-8e9f-00000000aaaa${suffix}`;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    // A fresh patient so the counts below are exact.
    const created = await fetch(`${server.url}/admin/v1/patients`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: '5f0e8a3c-1d2b-4c3d-8e9f-00000000aaaa', name: 'Search Patient', organizations: [ORG], consents: [ORG] }),
    });
    expect(created.status).toBe(201);
    const files: Array<[string, string]> = [
      ['/a', 'Scan.STL'],
      ['/a', 'notes.pdf'],
      ['/a/b', 'lower.stl'],
      ['/a/b/c', 'deep.ply'],
      ['/ab', 'sibling.stl'],
      ['/', 'root.obj'],
      ['/x', 'series-001.dcm'],
    ];
    for (const [folder, fileName] of files) {
      const response = await server.api('POST', patientRoute('/documents'), { body: { fileName, path: folder } });
      expect(response.status).toBe(201);
      ids[`${folder}|${fileName}`] = response.body.id;
      await new Promise((resolve) => setTimeout(resolve, 3));
    }
  });

  const search = (body: unknown) => server.api('POST', patientRoute('/documents/search'), { body });

  it('applies defaults and echoes them; total counts every match', async () => {
    const response = await search({});
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ offset: 0, limit: 50, total: 7 });
    const times = response.body.documents.map((document: { lastModifiedAt: string }) => document.lastModifiedAt);
    expect(times).toEqual([...times].sort().reverse());
  });

  it('takes a search with no body, or an empty one, as {} (SPEC §4.3: every field optional)', async () => {
    const headers = { authorization: `Bearer ${await server.token()}`, 'organization-id': ORG };
    const url = `${server.url}${patientRoute('/documents/search')}`;
    for (const init of [{ headers }, { headers: { ...headers, 'content-type': 'application/json' } }, { headers: { ...headers, 'content-type': 'application/json' }, body: '' }]) {
      const response = await fetch(url, { method: 'POST', ...init });
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ offset: 0, limit: 50, total: 7 });
    }
    // A body that is there must still be an object.
    expectProblem(await search([]), 400);
    expectProblem(await search('null'), 400);
    // Create has a required field: no body is still refused, with the rule.
    expectProblem(await server.api('POST', patientRoute('/documents'), { body: '' }), 400);
  });

  it('filters a folder and its descendants, never a sibling prefix', async () => {
    const response = await search({ path: '/a', sortBy: 'fileName', sortDirection: 'ASC' });
    expect(response.body.documents.map((document: { fileName: string }) => document.fileName)).toEqual(['deep.ply', 'lower.stl', 'notes.pdf', 'Scan.STL']);
    expect(response.body.total).toBe(4);
    expect((await search({ path: '/A/B' })).body.total).toBe(2);
    expect((await search({ path: '/' })).body.total).toBe(7);
  });

  it('matches fileName as a case-insensitive substring and fileType exactly', async () => {
    expect((await search({ fileName: 'scan' })).body.documents.map((document: { fileName: string }) => document.fileName)).toEqual(['Scan.STL']);
    expect((await search({ fileType: 'STL' })).body.total).toBe(3);
    expect((await search({ fileType: 'STL', path: '/a' })).body.total).toBe(2);
  });

  it('filters hasContent (placeholders have none yet)', async () => {
    expect((await search({ hasContent: true })).body.total).toBe(0);
    expect((await search({ hasContent: false })).body.total).toBe(7);
  });

  it('lets a non-empty id list replace every other filter', async () => {
    const id = ids['/ab|sibling.stl']!;
    const response = await search({ id: [id], path: '/a', fileName: 'nomatch', hasContent: true, limit: 1 });
    expect(response.body.total).toBe(1);
    expect(response.body.documents[0].id).toBe(id);
    expect(response.body.documents[0].storageDownloadUri).toBeNull();
    expect(response.body.documents[0].fileSize).toBeNull();
  });

  it('accepts 30 ids and refuses 31', async () => {
    const thirty = Array.from({ length: 30 }, (_, index) => `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`);
    expect((await search({ id: thirty })).status).toBe(200);
    const problem = expectProblem(await search({ id: [...thirty, '00000000-0000-4000-8000-999999999999'] }), 400);
    expect(problem.detail).toContain('body/id');
  });

  it('pages stably with the same sort: offset += returned until total (SPEC §4.3 rule 2)', async () => {
    for (const sortBy of ['lastModifiedAt', 'fileName', 'fileSize', 'fileType', 'path']) {
      for (const sortDirection of ['ASC', 'DESC']) {
        const seen: string[] = [];
        let offset = 0;
        for (;;) {
          const page = await search({ offset, limit: 2, sortBy, sortDirection });
          if (page.body.documents.length === 0) break;
          seen.push(...page.body.documents.map((document: { id: string }) => document.id));
          offset += page.body.documents.length;
          if (offset >= page.body.total) break;
        }
        expect(new Set(seen).size).toBe(7);
        const whole = (await search({ limit: 1000, sortBy, sortDirection })).body.documents.map((document: { id: string }) => document.id);
        expect(seen).toEqual(whole);
        const reverse = (await search({ limit: 1000, sortBy, sortDirection: sortDirection === 'ASC' ? 'DESC' : 'ASC' })).body.documents.map((document: { id: string }) => document.id);
        expect(reverse).toEqual([...whole].reverse());
      }
    }
  });

  it('sends a page asked for again gzipped to a client that accepts gzip, and as it is to one that does not', async () => {
    const token = await server.token();
    const ask = (acceptEncoding: string) =>
      new Promise<{ headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
        const sent = request(`${server.url}${patientRoute('/documents/search')}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'organization-id': ORG, 'content-type': 'application/json', 'accept-encoding': acceptEncoding },
        });
        sent.on('response', (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => resolve({ headers: response.headers, body: Buffer.concat(chunks) }));
        });
        sent.on('error', reject);
        sent.end(JSON.stringify({ sortBy: 'fileName' }));
      });
    // Asked for the first time, a page is sent as it is, even to a client that takes gzip.
    const first = await ask('gzip, deflate, br');
    expect(first.headers['content-encoding']).toBeUndefined();
    expect(first.headers.vary).toBe('Accept-Encoding');
    const page = JSON.parse(first.body.toString('utf8'));
    expect(page.total).toBe(7);
    const plain = await ask('identity');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.body.equals(first.body)).toBe(true);
    for (const header of ['gzip, deflate, br', 'br;q=1, gzip;q=0.5']) {
      const zipped = await ask(header);
      expect(zipped.headers['content-encoding']).toBe('gzip');
      expect(zipped.body.length).toBeLessThan(plain.body.length / 2);
      expect(JSON.parse(gunzipSync(zipped.body).toString('utf8'))).toEqual(page);
    }
    for (const header of ['gzip;q=0, identity', 'br']) expect((await ask(header)).headers['content-encoding']).toBeUndefined();
    // A page too small to gain from gzip is sent as it is.
    const small = await server.api('POST', patientRoute('/documents/search'), { body: { fileName: 'no such file' }, headers: { 'accept-encoding': 'gzip' } });
    expect(small.headers.get('content-encoding')).toBeNull();
    expect(small.body.total).toBe(0);
  });

  it.each([
    [{ offset: -1 }, 'body/offset must be >= 0'],
    [{ limit: 0 }, 'body/limit must be >= 1'],
    [{ limit: 1001 }, 'body/limit must be <= 1000'],
    [{ limit: '5' }, 'body/limit must be integer'],
    [{ sortBy: 'size' }, 'body/sortBy must be one of "lastModifiedAt", "fileName", "fileSize", "fileType", "path"'],
    [{ sortDirection: 'asc' }, 'body/sortDirection must be one of "ASC", "DESC"'],
    [{ fileType: '' }, 'body/fileType must NOT have fewer than 1 characters'],
    [{ path: 'a' }, "path must begin with '/'"],
    [{ id: ['not-a-uuid'] }, 'body/id/0 must be a UUID'],
  ])('refuses %j with 400', async (body, rule) => {
    expect(expectProblem(await search(body), 400).detail).toContain(rule);
  });
});

describe('patients and single documents', () => {
  it('lists only patients with access and consent, filtered by name', async () => {
    const all = await server.api('GET', '/v1/patients?limit=100');
    expect(all.status).toBe(200);
    const names = all.body.patients.map((patient: { name: string }) => patient.name);
    expect(names).toContain('Jane Roe');
    expect(names).not.toContain('John Doe (no consent)');
    expect(names).not.toContain('Other Clinic Patient');
    const filtered = await server.api('GET', '/v1/patients?name=jane');
    expect(filtered.body.patients.map((patient: { name: string }) => patient.name)).toEqual(['Jane Roe']);
    expectProblem(await server.api('GET', '/v1/patients?limit=0'), 400);
  });

  it('reads one document and answers 404 for an unknown one', async () => {
    const created = await server.api('POST', documentsRoute, { body: { fileName: 'single.pdf', path: '/single' } });
    const read = await server.api('GET', `${documentsRoute}/${created.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ id: created.body.id, fileName: 'single.pdf', path: '/single', hasContent: false, storageDownloadUri: null, thumbnailDownloadUri: null });
    expectProblem(await server.api('GET', `${documentsRoute}/00000000-0000-4000-8000-000000000000`), 404);
  });
});

describe('operations', () => {
  it('serves an OpenAPI document generated from the route schemas, and a docs page', async () => {
    const openapi = (await (await fetch(`${server.url}/openapi.json`)).json()) as { openapi: string; paths: Record<string, Record<string, { requestBody?: unknown }>> };
    expect(openapi.openapi).toBe('3.1.0');
    expect(openapi.paths['/v1/patients/{patientId}/documents/search']?.post?.requestBody).toBeDefined();
    expect(Object.keys(openapi.paths)).toContain('/oauth2/token');
    const docs = await fetch(`${server.url}/docs/`);
    expect(docs.status).toBe(200);
    expect(await docs.text()).toContain('swagger');
  });

  it('names a created document and subscription in Location under PATIENT_DOCS_PUBLIC_URL, path prefix included', async () => {
    const prefixed = await startTestServer({ PATIENT_DOCS_PUBLIC_URL: 'https://docs.example.org/patient-docs', PATIENT_DOCS_ALLOW_PRIVATE_CALLBACKS: 'true' });
    try {
      const created = await prefixed.api('POST', documentsRoute, { body: { fileName: 'located.stl', path: '/located' } });
      expect(created.status).toBe(201);
      expect(created.headers.get('location')).toBe(`https://docs.example.org/patient-docs${documentsRoute}/${created.body.id}`);
      expect(created.body.storageUrl).toBe(`https://docs.example.org/patient-docs/storage/v1/documents/${created.body.id}`);
      const subscribed = await prefixed.api('POST', '/v1/webhooks/subscribe', { body: { events: ['patient.created'], callback: 'https://127.0.0.1:9/hook', hmac: 'located-secret' } });
      expect(subscribed.status).toBe(201);
      expect(subscribed.headers.get('location')).toBe(`https://docs.example.org/patient-docs/v1/webhooks/${subscribed.body.id}`);
    } finally {
      await prefixed.close();
    }
  });

  it('lists for each document route the statuses SPEC §4.1 and §4.3 name (no 409 for search, get, versions or delete)', async () => {
    const openapi = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
    const statuses = (path: string, method: string) => Object.keys(openapi.paths[path]?.[method]?.responses ?? {});
    const documents = '/v1/patients/{patientId}/documents';
    const one = `${documents}/{documentId}`;
    expect(statuses(documents, 'post')).toEqual(['201', '400', '401', '403', '404', '409', '413', '500', '503']);
    expect(statuses(`${documents}/search`, 'post')).toEqual(['200', '400', '401', '403', '404', '413', '500', '503']);
    for (const [path, method, ok] of [[one, 'get', '200'], [one, 'delete', '204'], [`${one}/versions`, 'get', '200']] as const) {
      expect(statuses(path, method)).toEqual([ok, '400', '401', '403', '404', '500', '503']);
    }
  });

  it('answers unknown routes with a problem', async () => {
    expectProblem(await server.api('GET', '/v2/nothing'), 404);
  });

  it('does not let failed requests from another address use up a client\'s token budget', async () => {
    const limited = await startTestServer({ PATIENT_DOCS_TOKEN_RATE_LIMIT: '3' });
    const post = (form: Record<string, string>, localAddress: string) =>
      new Promise<number>((resolve, reject) => {
        const sent = request(`${limited.url}/oauth2/token`, { method: 'POST', localAddress, headers: { 'content-type': 'application/x-www-form-urlencoded' } }, (response) => {
          response.resume();
          resolve(response.statusCode!);
        });
        sent.on('error', reject).end(new URLSearchParams(form).toString());
      });
    try {
      const attacker: number[] = [];
      for (let attempt = 0; attempt < 6; attempt += 1) attacker.push(await post({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: 'guess' }, '127.0.0.2'));
      expect(attacker).toEqual([401, 401, 401, 429, 429, 429]);
      expect(await post({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret }, '127.0.0.1')).toBe(200);
    } finally {
      await limited.close();
    }
  });

  it('rate-limits the token endpoint per client with Retry-After', async () => {
    const limited = await startTestServer({ PATIENT_DOCS_TOKEN_RATE_LIMIT: '3' });
    try {
      const statuses: number[] = [];
      let retryAfter: string | null = null;
      let response429Pragma: string | null = null;
      for (let attempt = 0; attempt < 5; attempt += 1) {
        const response = await fetch(`${limited.url}/oauth2/token`, {
          method: 'POST',
          body: new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret }),
        });
        statuses.push(response.status);
        if (response.status === 429) {
          retryAfter = response.headers.get('retry-after');
          response429Pragma = response.headers.get('pragma');
        }
      }
      expect(statuses).toEqual([200, 200, 200, 429, 429]);
      expect(Number(retryAfter)).toBeGreaterThan(0);
      expect(response429Pragma).toBe('no-cache');
    } finally {
      await limited.close();
    }
  });
});
