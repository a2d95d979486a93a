/**
 * The Inbox view as reception uses it (issue 27), in Chromium against the real headless app and a
 * real server: cases newest first with their scanner, files, size and evidence; a case that names
 * its patient by id is filed on its own; one that only names a person waits with that person
 * suggested first; one whose evidence disagrees is a conflict. Staff confirm with the keyboard only,
 * and the case syncs at once to the patient chosen. Screenshots: waiting, conflicting and synced.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settledScreenshot } from './helpers/axe.js';
import { closeDesk, openDesk, type Desk } from './helpers/desk.js';
import { ADMIN_TOKEN, CLIENT, ORG, tempDir } from './helpers/server.js';
import { waitFor } from './helpers/sync.js';
import { writeDicomSeries, writeThreeShapeCase } from './fixtures/scanner-cases.js';

interface Patient {
  id: string;
  name: string;
}

describe('the Inbox view', () => {
  const scratch = tempDir('desk-inbox');
  const inbox = path.join(scratch, 'exports');
  let desk: Desk;
  let theo: Patient;
  let thea: Patient;

  async function createPatient(name: string): Promise<Patient> {
    const response = await fetch(`${desk.server.url}/admin/v1/patients`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name, organizations: [ORG], consents: [ORG] }),
    });
    expect(response.status).toBe(201);
    return (await response.json()) as Patient;
  }

  async function filed(patient: Patient): Promise<string[]> {
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret });
    const { access_token: token } = (await (await fetch(`${desk.server.url}/oauth2/token`, { method: 'POST', body: form })).json()) as { access_token: string };
    const response = await fetch(`${desk.server.url}/v1/patients/${patient.id}/documents/search`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'organization-id': ORG, 'content-type': 'application/json' },
      body: JSON.stringify({ limit: 100, hasContent: true }),
    });
    return ((await response.json()) as { documents: Array<{ path: string; fileName: string }> }).documents.map((document) => `${document.path}/${document.fileName}`).sort();
  }

  beforeAll(async () => {
    fs.mkdirSync(inbox, { recursive: true });
    desk = await openDesk(path.join(scratch, 'home'));
    theo = await createPatient('Theo Armour');
    thea = await createPatient('Thea Armour');
    await desk.headless.app.inbox.addInbox({ folder: inbox, remoteBasePath: '/scans' }, []);
  });
  afterAll(() => closeDesk(desk, scratch));

  it('lists the cases, and staff file the waiting and the conflicting one with the keyboard alone', async () => {
    const cases = () => desk.headless.app.inbox.cases();
    const byId = writeDicomSeries(inbox, `${theo.id}_CBCT`, { patientId: theo.id, patientName: 'Armour^Theo' }, 3);
    await waitFor('the case named by its patient id to sync', () => cases().find((item) => item.name === byId && item.state === 'synced'), 60_000);
    const conflict = writeDicomSeries(inbox, 'CBCT_0412', { patientId: theo.id, patientName: 'Armour^Thea' }, 2);
    const nameOnly = writeThreeShapeCase(inbox, { family: 'Armour', given: 'Theo' });
    await waitFor('both cases to be identified', () => cases().filter((item) => item.state === 'needs-patient' && item.suggestions.length > 0).length === 1 && cases().some((item) => item.state === 'conflict'), 60_000);

    const page = desk.page;
    await page.goto(desk.headless.openUrl);
    await page.getByRole('button', { name: 'Inbox' }).click();
    const list = page.getByRole('list', { name: 'Cases' });
    await list.locator(`li[data-case="${nameOnly}"][data-state="needs-patient"]`).waitFor();
    // Newest first: the 3Shape case was written last.
    expect(await list.locator(':scope > li').evaluateAll((items) => items.map((item) => item.getAttribute('data-case')))).toEqual([nameOnly, conflict, byId]);
    const waitingCase = list.locator(`li[data-case="${nameOnly}"]`);
    await waitingCase.getByText(/^3Shape · 3 files · /).waitFor();
    await waitingCase.getByText('name in 3Shape order: Armour, Theo').waitFor();
    await list.locator(`li[data-case="${conflict}"]`).getByText(`Patient id in DICOM header: ${theo.id} is Theo Armour, but name in DICOM header: Armour, Thea.`).waitFor();
    await list.locator(`li[data-case="${byId}"]`).getByText('filed automatically').waitFor();
    await settledScreenshot(page, 'inbox-waiting-conflict-synced');

    // Keyboard only: focus the waiting case's button, open the picker, take the first suggestion, file it.
    await page.getByRole('button', { name: `Choose patient for ${nameOnly}` }).focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog');
    const first = dialog.locator('.inbox-suggestions button').first();
    await expect.poll(() => first.evaluate((element) => element === document.activeElement)).toBe(true);
    expect(await first.getAttribute('data-patient-id')).toBe(theo.id);
    await settledScreenshot(page, 'inbox-picker-suggestions');
    await page.keyboard.press('Enter');
    const fileButton = dialog.getByRole('button', { name: `File ${nameOnly} under Theo Armour` });
    for (let step = 0; step < 10 && !(await fileButton.evaluate((element) => element === document.activeElement)); step += 1) await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await list.locator(`li[data-case="${nameOnly}"][data-state="synced"]`).waitFor({ timeout: 60_000 });
    expect((await filed(theo)).filter((file) => file.startsWith(`/scans/${nameOnly}/`))).toHaveLength(3);

    // The conflict: search another patient by name, still by keyboard.
    await page.getByRole('button', { name: `Choose patient for ${conflict}` }).focus();
    await page.keyboard.press('Enter');
    const search = dialog.getByRole('searchbox');
    await search.focus();
    await page.keyboard.type('thea');
    // The search answered (before it, every patient is listed).
    await expect.poll(() => dialog.locator('.patient-option').evaluateAll((options) => options.map((option) => option.getAttribute('data-patient-id')))).toEqual([thea.id]);
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Enter');
    const fileThea = dialog.getByRole('button', { name: `File ${conflict} under Thea Armour` });
    for (let step = 0; step < 10 && !(await fileThea.evaluate((element) => element === document.activeElement)); step += 1) await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await list.locator(`li[data-case="${conflict}"][data-state="synced"]`).waitFor({ timeout: 60_000 });
    expect(await filed(thea)).toEqual([`/scans/${conflict}/DICOM/IM0001`, `/scans/${conflict}/DICOM/IM0002`]);
    expect((await filed(theo)).some((file) => file.includes(conflict))).toBe(false);
    await settledScreenshot(page, 'inbox-synced');

    // The Activity view lists who filed which case, and how.
    await page.getByRole('button', { name: 'Activity' }).click();
    await page.getByRole('tab', { name: 'Case assignments' }).click();
    const table = page.getByRole('table', { name: 'Case assignments' });
    await table.getByText(conflict).waitFor();
    expect(await table.locator('tbody tr').count()).toBe(3);
    await table.getByText('Automatic by').first().waitFor();

    // On the Sync screen a case is a folder of its own (its files listed), stopped or paused only with its inbox.
    const casePair = desk.headless.app.engine.pairList().find((pair) => pair.only === conflict)!;
    expect(desk.headless.app.requirePair(casePair.id).folder).toBe(path.join(inbox, conflict));
    await expect(desk.headless.app.removePair(casePair.id)).rejects.toThrow('This is a case of the scanner inbox');
    expect(desk.headless.app.engine.pairList().some((pair) => pair.id === casePair.id)).toBe(true);
  });
});
