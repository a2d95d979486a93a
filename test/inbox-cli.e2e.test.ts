/**
 * The scanner inbox end to end (issue 27), against a real server process and real folders, driven
 * by `patient-docs-sync` as IT scripts it: a case goes to its patient on its own only when a chart
 * number matches exactly one patient; a name only suggests; evidence that disagrees is a conflict;
 * a case's patient can be changed until an upload of it begins, never after; two cases exported at
 * the same moment reach their own patients; a run killed during a case's upload resumes to the same
 * patient. One server and one sync home for the file; each step adds cases to the same inbox.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, spawnCli, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { ADMIN_TOKEN, CLIENT, ORG, tempDir } from './helpers/server.js';
import { prepareSyncHome } from './helpers/sync.js';
import { writeDicomSeries, writeIteroCase, writeLoosePdf, writeThreeShapeCase } from './fixtures/scanner-cases.js';

const env = { PATIENT_DOCS_CLIENT_SECRET: CLIENT.secret, PATIENT_DOCS_SYNC_BACKOFF_BASE_MS: '100' };

interface Patient {
  id: string;
  name: string;
}

describe('a scanner inbox files each case under the right patient, and never the wrong one', () => {
  let server: ServerProcess;
  const scratch = tempDir('inbox-cli');
  const home = path.join(scratch, 'home');
  const inbox = path.join(scratch, 'exports');
  let theo: Patient;
  let thea: Patient;
  let zoe: Patient;

  async function createPatient(name: string, chart: string, birthDate: string): Promise<Patient> {
    const response = await fetch(`${server.url}/admin/v1/patients`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name, organizations: [ORG], consents: [ORG], identifiers: [{ system: 'chart', value: chart }], birthDate }),
    });
    const body = (await response.json()) as Patient;
    expect(response.status, JSON.stringify(body)).toBe(201);
    return body;
  }

  /**
   * The workstation's token, asked for once: a token request checks the secret (scrypt, tens of ms
   * of the server's CPU), and `filed` is polled while the sync under test needs the cores.
   */
  let token: string | undefined;
  async function bearer(): Promise<string> {
    if (token) return token;
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret });
    token = ((await (await fetch(`${server.url}/oauth2/token`, { method: 'POST', body: form })).json()) as { access_token: string }).access_token;
    return token;
  }

  /** A patient's documents on the server with content, as `path/fileName`. */
  async function filed(patient: Patient): Promise<string[]> {
    const token = await bearer();
    const response = await fetch(`${server.url}/v1/patients/${patient.id}/documents/search`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'organization-id': ORG, 'content-type': 'application/json' },
      body: JSON.stringify({ limit: 200, hasContent: true }),
    });
    const body = (await response.json()) as { documents: Array<{ path: string; fileName: string }> };
    return body.documents.map((document) => `${document.path}/${document.fileName}`).sort();
  }

  const cases = async () => {
    const result = await runCli(home, ['cases', '--folder', inbox, '--json'], env);
    expect(result.code, result.stderr).toBe(0);
    return (JSON.parse(result.stdout) as { cases: Array<Record<string, any>> }).cases;
  };
  const caseNamed = async (name: string) => (await cases()).find((item) => item.name === name)!;

  beforeAll(async () => {
    server = await startServerProcess();
    theo = await createPatient('Theo Armour', '10231', '1984-02-29');
    thea = await createPatient('Thea Armour', '10232', '1984-02-29');
    zoe = await createPatient('Zoë Müller', '555', '1990-01-02');
    fs.mkdirSync(inbox, { recursive: true });
    await prepareSyncHome(home, { serverUrl: server.url });
    const added = await runCli(home, ['add-inbox', '--folder', inbox, '--path', '/scans', '--rule', '{chart}_*'], env);
    expect(added.code, added.stderr).toBe(0);
  });
  afterAll(async () => {
    await server?.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('assigns by chart number, waits on a name with the right first suggestion, and calls disagreeing evidence a conflict', async () => {
    const itero = writeIteroCase(inbox, '40012345', { family: 'Armour', given: 'Theo', chart: '10231', birthDate: '1984-02-29' });
    const nameOnly = writeThreeShapeCase(inbox, { family: 'Armour', given: 'Theo' });
    const conflict = writeDicomSeries(inbox, 'CBCT_7', { patientId: '10231', patientName: 'Armour^Thea' }, 3);
    const loose = writeLoosePdf(inbox, 'referral letter.pdf');

    const run = await runCli(home, ['run', '--once', '--timeout', '60'], env);
    expect(run.code, run.stdout + run.stderr).toBe(3);
    expect(run.stdout).toContain(`synced   ${itero}/40012345_u.stl → /scans/${itero}/40012345_u.stl`);
    expect(run.stdout).toContain('3 case(s) still need a patient');
    expect(await filed(theo)).toEqual([`/scans/${itero}/40012345_export.xml`, `/scans/${itero}/40012345_l.stl`, `/scans/${itero}/40012345_u.stl`]);

    // One look at the inbox for the four cases (a `cases` process each would read the same).
    const listed = await cases();
    const named = (name: string) => listed.find((item) => item.name === name)!;
    const auto = named(itero);
    expect(auto).toMatchObject({ state: 'synced', patientId: theo.id, assignedHow: 'automatic', assignedBy: expect.any(String), fileCount: 3, scanner: 'iTero' });
    expect(auto.evidence).toContain('chart number in iTero export: 10231');

    const waiting = named(nameOnly);
    expect(waiting).toMatchObject({ state: 'needs-patient', patientId: null, scanner: '3Shape' });
    expect(waiting.suggestions[0]).toMatchObject({ patientId: theo.id, name: 'Theo Armour', because: ['name in 3Shape order: Armour, Theo'] });

    const disagreeing = named(conflict);
    expect(disagreeing).toMatchObject({ state: 'conflict', patientId: null });
    expect(disagreeing.reason).toBe('Chart number in DICOM header: 10231 is Theo Armour, but name in DICOM header: Armour, Thea.');
    expect(named(loose)).toMatchObject({ state: 'needs-patient', suggestions: [], fileCount: 1, scanner: 'PDF' });
    // Nothing of a case without a patient reached anyone.
    expect(await filed(thea)).toEqual([]);
    expect(await filed(zoe)).toEqual([]);
  });

  it('lets IT confirm a case by the CLI, change it before any upload, and refuses a change after', async () => {
    const name = writeThreeShapeCase(inbox, { family: 'Muller', given: 'Zoe' }, '2026-11-29');
    expect((await runCli(home, ['assign', '--folder', inbox, '--case', name, '--patient', thea.id], env)).code).toBe(0);
    const changed = await runCli(home, ['assign', '--folder', inbox, '--case', name, '--patient', zoe.id], env);
    expect(changed.code, changed.stderr).toBe(0);
    expect(changed.stdout).toContain(`assigned ${name} → Zoë Müller`);

    const run = await runCli(home, ['run', '--once', '--timeout', '60'], env);
    expect(run.code).toBe(3); // the cases of the first test still wait
    expect(await filed(zoe)).toEqual([`/scans/${name}/${name}.xml`, `/scans/${name}/Scans/Raw Lower.ply`, `/scans/${name}/Scans/Raw Upper.ply`]);
    expect(await filed(thea)).toEqual([]);
    expect(await caseNamed(name)).toMatchObject({ state: 'synced', patientId: zoe.id, assignedHow: 'confirmed' });

    const refused = await runCli(home, ['assign', '--folder', inbox, '--case', name, '--patient', thea.id], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`'${name}' cannot go to another patient: 3 of its files were already sent to Zoë Müller. Files already filed stay where they are; IT can move them on the server.`);
    expect(await caseNamed(name)).toMatchObject({ patientId: zoe.id });
  });

  it('sends two cases exported at the same moment to their own patients, and resumes a killed run to the same patient', async () => {
    // Slow enough that the run is killed while the CBCT series is uploading.
    expect((await runCli(home, ['config', '--bandwidth', '400000'], env)).code).toBe(0);
    const runner = spawnCli(home, ['run'], env);
    const [forTheo, forThea] = [writeDicomSeries(inbox, '10231_CBCT', { patientId: '10231', patientName: 'Armour^Theo' }, 6, 300_000), writeIteroCase(inbox, '40099999', { family: 'Armour', given: 'Thea', chart: '10232' })];
    await waitFor(async () => (await filed(theo)).some((file) => file.startsWith(`/scans/${forTheo}/`)), 60_000);
    runner.child.kill('SIGKILL');
    await runner.done;
    expect((await runCli(home, ['config', '--bandwidth', '0'], env)).code).toBe(0);
    expect((await runCli(home, ['run', '--once', '--timeout', '120'], env)).code).toBe(3);
    expect((await filed(theo)).filter((file) => file.startsWith(`/scans/${forTheo}/`))).toEqual([1, 2, 3, 4, 5, 6].map((index) => `/scans/${forTheo}/DICOM/IM000${index}`));
    expect((await filed(thea)).filter((file) => file.startsWith(`/scans/${forThea}/`))).toHaveLength(3);
    expect((await filed(zoe)).some((file) => file.includes(forTheo) || file.includes(forThea))).toBe(false);
    expect(await caseNamed(forTheo)).toMatchObject({ state: 'synced', patientId: theo.id, assignedHow: 'automatic' });
  });
});

async function waitFor(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
