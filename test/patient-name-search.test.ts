// GET /v1/patients?name= as staff type a name: each word in any order, ignoring case, accents and
// punctuation (shared/name-search.ts, the function the app uses too), on a real server and database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, ORG, startTestServer, type TestServer } from './helpers/server.js';

let server: TestServer;
const NAMES = ['Jane Pearson', 'John Pearson', 'Anna Müller', 'José García', "Siobhán O'Brien", 'Smith, John', 'Smith, Jon'];

beforeAll(async () => {
  server = await startTestServer();
  for (const name of NAMES) {
    const created = await server.api('POST', '/admin/v1/patients', { token: ADMIN_TOKEN, organization: null, body: { name, organizations: [ORG], consents: [ORG] } });
    expect(created.status).toBe(201);
  }
});
afterAll(async () => {
  await server?.close();
});

async function found(query: string): Promise<string[]> {
  const answer = await server.api('GET', `/v1/patients?limit=100&name=${encodeURIComponent(query)}`);
  expect(answer.status).toBe(200);
  expect(answer.body.total).toBe(answer.body.patients.length);
  return answer.body.patients.map((patient: { name: string }) => patient.name).filter((name: string) => NAMES.includes(name));
}

describe('finding a patient by name', () => {
  it('matches each word in any order, ignoring case, accents and punctuation', async () => {
    expect(await found('Jane Pearson')).toEqual(['Jane Pearson']);
    expect(await found('pearson jane')).toEqual(['Jane Pearson']);
    expect(await found('muller')).toEqual(['Anna Müller']);
    expect(await found('garcia')).toEqual(['José García']);
    expect(await found('obrien')).toEqual(["Siobhán O'Brien"]);
    expect(await found('smith j')).toEqual(['Smith, John', 'Smith, Jon']);
  });

  it('answers an empty page for a word no name holds, and every patient for a blank name', async () => {
    expect(await found('pearson zzz')).toEqual([]);
    expect((await found('   ')).sort()).toEqual([...NAMES].sort());
  });

  it('finds the same way in the admin API', async () => {
    const answer = await server.api('GET', `/admin/v1/patients?name=${encodeURIComponent('MULLER anna')}`, { token: ADMIN_TOKEN, organization: null });
    expect(answer.body.patients.map((patient: { name: string }) => patient.name)).toEqual(['Anna Müller']);
  });
});
