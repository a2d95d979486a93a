// Keyboard only, in real Chromium against a scripted engine (test/helpers/renderer-page.ts): staff at
// the chair connect, add a folder, retry a failed file, find a patient, move through the folder tree,
// filter, open and close a preview and download — Tab, arrows, Enter and Escape, no mouse. Every stop
// of the Tab key must show where the focus is, and the focus must never fall back to the page when the
// control that had it goes away.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLAIN_MESSAGES } from '../shared/bridge-errors.js';
import type { PairView } from '../shared/bridge.js';
import type { SearchBody } from '../shared/schemas.js';
import { counts, documentDto, fileView, launchBrowser, openRenderer, pairView, patient, STATUS } from './helpers/renderer-page.js';

let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
});

/** What has the focus, as a person would name it: role, accessible name (or id), and whether a focus ring shows. */
async function focused(page: Page): Promise<{ tag: string; role: string | null; name: string; id: string; ring: boolean }> {
  return page.evaluate(() => {
    const element = document.activeElement as HTMLElement | null;
    if (!element || element === document.body) return { tag: 'body', role: null, name: '', id: '', ring: false };
    const style = getComputedStyle(element);
    const outline = style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0;
    const shadow = style.boxShadow !== 'none';
    // A field inside a styled box (the search boxes) shows the ring on the box.
    const box = element.closest('.search-input');
    const boxRing = box ? getComputedStyle(box).boxShadow !== 'none' : false;
    const text = (node: Element) => {
      const copy = node.cloneNode(true) as Element;
      copy.querySelectorAll('[aria-hidden="true"]').forEach((hidden) => hidden.remove());
      return copy.textContent ?? '';
    };
    const label = element instanceof HTMLInputElement || element instanceof HTMLSelectElement || element instanceof HTMLTextAreaElement ? element.labels?.[0] : null;
    const name = element.getAttribute('aria-label') ?? (label ? text(label) : text(element));
    return { tag: element.tagName.toLowerCase(), role: element.getAttribute('role'), name: name.replace(/\s+/g, ' ').trim(), id: element.id, ring: outline || shadow || boxRing };
  });
}

/** Presses Tab until the focus is on what `wanted` describes; every stop on the way must show its focus. */
async function tabTo(page: Page, wanted: (stop: Awaited<ReturnType<typeof focused>>) => boolean, what: string, { max = 40, key = 'Tab' } = {}): Promise<void> {
  const stops: string[] = [];
  for (let press = 0; press < max; press += 1) {
    await page.keyboard.press(key);
    const stop = await focused(page);
    stops.push(`${stop.tag}${stop.role ? `[${stop.role}]` : ''} "${stop.name.slice(0, 40)}"`);
    expect(stop.tag, `the focus fell back to the page on the way to ${what} (after ${stops.join(' → ')})`).not.toBe('body');
    expect(stop.ring, `no visible focus on ${stops.at(-1)}`).toBe(true);
    if (wanted(stop)) return;
  }
  throw new Error(`${what} was not reached with ${key}: ${stops.join(' → ')}`);
}

describe('keyboard only', () => {
  it('connects to a server from the first-run screen, then adds a folder in the dialog and closes it with Escape', async () => {
    let configured = false;
    const pairs: PairView[] = [];
    const app = await openRenderer(browser, {
      getStatus: () => (configured ? STATUS : { ...STATUS, mode: 'unconfigured', server: null }),
      testConnection: () => ({ ok: true, step: null, error: null, organizationName: 'Smile Clinic' }) as never,
      setupRemote: () => {
        configured = true;
        return STATUS;
      },
      listPatients: (query) => {
        const all = [patient('Jane Roe', 1), patient('John Doe', 2)];
        const found = all.filter((entry) => !query.name || entry.name.toLowerCase().includes(query.name.toLowerCase()));
        return { patients: found, total: found.length, offset: 0, limit: 100 };
      },
      listPairs: () => pairs,
      addPair: (input) => {
        const pair = pairView({ folder: input.folder, patientId: input.patientId, patientName: input.patientName ?? null, remoteBasePath: input.remoteBasePath });
        pairs.push(pair);
        return pair;
      },
    });
    try {
      const page = app.page;
      await page.getByText('Where are the patient records kept?').waitFor();
      // The two choices are a radio group: Tab into it, an arrow picks "Connect to a server".
      await tabTo(page, (stop) => stop.name.startsWith('This computer runs the server'), 'the first choice');
      await page.keyboard.press('ArrowDown');
      await page.getByLabel('Server address', { exact: true }).waitFor();
      await tabTo(page, (stop) => stop.id === 'field-server-address', 'the server address');
      await page.keyboard.type('https://docs.smile-clinic.example');
      await tabTo(page, (stop) => stop.id === 'field-client-id', 'the client ID');
      await page.keyboard.type('scanner-pc-1');
      await page.keyboard.press('Tab');
      await page.keyboard.type('a long random secret');
      await tabTo(page, (stop) => stop.id === 'field-organization-id', 'the organization ID');
      await page.keyboard.type('0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01');
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { name: 'Sync', level: 1 }).waitFor();
      expect(app.calls.find((call) => call.method === 'setupRemote')?.args[0]).toMatchObject({ serverUrl: 'https://docs.smile-clinic.example', clientId: 'scanner-pc-1', organizationId: '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01' });

      // Add a folder: the dialog opens on its search box, an arrow and Enter pick the patient.
      await tabTo(page, (stop) => stop.name === 'Add folder', '"Add folder"', { max: 15 });
      await page.keyboard.press('Enter');
      await page.getByRole('dialog', { name: 'Sync a folder' }).waitFor();
      expect((await focused(page)).id).toBe('patient-search-compact');
      await page.keyboard.type('Jane');
      await page.getByRole('dialog').getByRole('button', { name: 'Jane Roe', exact: true }).waitFor();
      await expect.poll(() => page.getByRole('dialog').locator('.patient-option').count()).toBe(1);
      await page.keyboard.press('ArrowDown');
      await page.keyboard.press('Enter');
      expect(await page.getByRole('dialog').getByRole('button', { name: 'Jane Roe', exact: true }).getAttribute('aria-current')).toBe('true');
      await tabTo(page, (stop) => stop.id === 'pair-folder', 'the scan folder field');
      await page.keyboard.type('/home/clinic/scans/chair 1');
      await page.keyboard.press('Enter');
      await page.getByRole('dialog').waitFor({ state: 'hidden' });
      expect(app.calls.find((call) => call.method === 'addPair')?.args[0]).toMatchObject({ folder: '/home/clinic/scans/chair 1', patientName: 'Jane Roe' });
      // The empty list's "Add folder" went with the empty list: the focus is on the new folder's card, not lost.
      await expect.poll(async () => (await focused(page)).name).toBe('/home/clinic/scans/chair 1 to Jane Roe');

      // Escape closes the dialog and the focus is back on the button that opened it.
      await tabTo(page, (stop) => stop.name === 'Add folder', 'the header’s "Add folder"', { max: 10, key: 'Shift+Tab' });
      await page.keyboard.press('Enter');
      await page.getByRole('dialog', { name: 'Sync a folder' }).waitFor();
      await page.keyboard.press('Escape');
      await page.getByRole('dialog').waitFor({ state: 'hidden' });
      expect((await focused(page)).name).toBe('Add folder');
    } finally {
      await app.close();
    }
  });

  it('reads a failed file’s whole reason, retries it and answers "Stop syncing" without losing the focus', async () => {
    const detail = 'consent missing for organization 0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01 and patient 5f0e8a3c-1d2b-4c3d-8e9f-000000000001 (record 4711)';
    const failed = fileView({ relativePath: 'lower-arch.stl', state: 'failed', syncedAt: null, error: { code: 'NO_CONSENT', message: PLAIN_MESSAGES.NO_CONSENT, detail } });
    const pair = pairView({ state: 'attention', counts: counts({ failed: 1, synced: 1 }), failureReasons: [{ code: 'NO_CONSENT', message: PLAIN_MESSAGES.NO_CONSENT, count: 1 }] });
    const app = await openRenderer(browser, { listPairs: () => [pair], listFiles: () => ({ files: [failed, fileView({ relativePath: 'upper-arch.stl' })], total: 2 }), retryFailed: () => 1 });
    try {
      const page = app.page;
      await page.locator('.file-row[data-state="failed"]').waitFor();
      // The row has room for one line of the reason; "Details" shows the whole of it, and Escape hides it again.
      await tabTo(page, (stop) => stop.name === 'Details of lower-arch.stl', 'the failed file’s Details button');
      await page.keyboard.press('Enter');
      expect(await focused(page)).toMatchObject({ role: 'region', name: 'Why lower-arch.stl could not be uploaded' });
      const whole = page.getByRole('region', { name: 'Why lower-arch.stl could not be uploaded' });
      const shown = (await whole.innerText()).replace(/\s+/g, ' ');
      for (const part of [PLAIN_MESSAGES.NO_CONSENT, 'Once the patient’s consent is recorded, choose Retry.', `Server said: ${detail}`]) expect(shown).toContain(part);
      // Nothing of it cut off: every line fits the panel.
      expect(await whole.locator('p, strong').evaluateAll((lines) => lines.filter((line) => line.scrollWidth > line.clientWidth + 1).length)).toBe(0);
      expect(await page.getByRole('button', { name: 'Details of lower-arch.stl' }).getAttribute('aria-expanded')).toBe('true');
      await page.keyboard.press('Escape');
      await whole.waitFor({ state: 'detached' });
      expect(await focused(page)).toMatchObject({ name: 'Details of lower-arch.stl' });
      expect(await page.getByRole('button', { name: 'Details of lower-arch.stl' }).getAttribute('aria-expanded')).toBe('false');
      await tabTo(page, (stop) => stop.name === 'Retry lower-arch.stl', 'the file’s Retry button');
      await page.keyboard.press('Enter');
      await expect.poll(() => app.calls.find((call) => call.method === 'retryFailed')?.args[0]).toEqual({ fileId: failed.id });
      await app.emit([{ type: 'files', pairId: pair.id, files: [{ ...failed, state: 'queued', error: null }] }]);
      await page.locator('.file-row[data-state="queued"]').waitFor();
      // The Retry button left with the failed state; the focus is on the list it was in.
      expect(await focused(page)).toMatchObject({ role: 'list', name: 'Files of /home/clinic/scans/chair 1 to Jane Roe' });

      await tabTo(page, (stop) => stop.name === 'Stop syncing', '"Stop syncing"', { key: 'Shift+Tab' });
      await page.keyboard.press('Enter');
      expect(await focused(page)).toMatchObject({ name: 'Cancel' });
      await page.keyboard.press('Escape');
      expect(await focused(page)).toMatchObject({ name: 'Stop syncing' });
    } finally {
      await app.close();
    }
  });

  it('a failed file’s whole reason goes when the file is retried from elsewhere, and the focus it had stays in the file list', async () => {
    const failed = fileView({ relativePath: 'bite.stl', state: 'failed', syncedAt: null, error: { code: 'NO_CONSENT', message: PLAIN_MESSAGES.NO_CONSENT } });
    const pair = pairView({ state: 'attention', counts: counts({ failed: 1 }), failureReasons: [{ code: 'NO_CONSENT', message: PLAIN_MESSAGES.NO_CONSENT, count: 1 }] });
    const app = await openRenderer(browser, { listPairs: () => [pair], listFiles: () => ({ files: [failed], total: 1 }) });
    try {
      const page = app.page;
      await page.locator('.file-row[data-state="failed"]').waitFor();
      await tabTo(page, (stop) => stop.name === 'Details of bite.stl', 'the failed file’s Details button');
      await page.keyboard.press('Enter');
      expect(await focused(page)).toMatchObject({ role: 'region', name: 'Why bite.stl could not be uploaded' });
      await app.emit([{ type: 'files', pairId: pair.id, files: [{ ...failed, state: 'queued', error: null }] }]);
      await page.locator('.whole-reason').waitFor({ state: 'detached' });
      expect(await focused(page)).toMatchObject({ role: 'list', name: 'Files of /home/clinic/scans/chair 1 to Jane Roe' });
    } finally {
      await app.close();
    }
  });

  it('"Try now" on a waiting file and on the card keeps the focus and says what it did; "Stop syncing" moves the focus to the next card, then to "Add folder"', async () => {
    const waiting = fileView({ relativePath: 'w.stl', state: 'waiting', syncedAt: null, nextAttemptAt: Date.now() + 600_000, error: { code: 'UNREACHABLE', message: PLAIN_MESSAGES.UNREACHABLE } });
    const first = pairView({ id: 'chair-1', state: 'syncing', counts: counts({ waiting: 2 }), retryReason: { code: 'UNREACHABLE', message: PLAIN_MESSAGES.UNREACHABLE } });
    const second = pairView({ id: 'chair-2', folder: '/home/clinic/scans/chair 2' });
    let pairs: PairView[] = [first, second];
    const app = await openRenderer(browser, {
      listPairs: () => pairs,
      listFiles: (input) => (input.pairId === first.id ? { files: [waiting], total: 1 } : { files: [], total: 0 }),
      retryFailed: (target) => (target.fileId ? 1 : 2),
      removePair: (pairId) => {
        pairs = pairs.filter((pair) => pair.id !== pairId);
      },
    });
    try {
      const page = app.page;
      // What the sync screen's polite status region says (read without waiting for it to exist).
      const heard = () => page.locator('[data-testid="sync-screen-announcements"]').evaluateAll((regions) => regions[0]?.textContent ?? null);
      await page.locator('.file-row[data-state="waiting"]').waitFor();
      // The row's "Try now": the row leaves the waiting state, the focus stays on the list, the reader hears it.
      await tabTo(page, (stop) => stop.name === 'Try now w.stl', 'the file’s Try now button');
      await page.keyboard.press('Enter');
      await expect.poll(heard).toBe('Trying 1 file again now.');
      await app.emit([{ type: 'files', pairId: first.id, files: [{ ...waiting, state: 'queued', nextAttemptAt: null, error: null }] }]);
      await page.locator('.file-row[data-state="queued"]').waitFor();
      expect(await focused(page)).toMatchObject({ role: 'list', name: 'Files of /home/clinic/scans/chair 1 to Jane Roe' });

      // The card notice's "Try now": the notice goes as the files become due; the focus is on the card.
      await tabTo(page, (stop) => stop.name === 'Try now', 'the card’s Try now button', { key: 'Shift+Tab' });
      await page.keyboard.press('Enter');
      await expect.poll(heard).toBe('Trying 2 files again now.');
      await app.emit([{ type: 'pairs', pairs: (pairs = [{ ...first, counts: counts({ queued: 2 }), retryReason: null }, second]) }]);
      await page.getByRole('button', { name: 'Try now', exact: true }).waitFor({ state: 'detached' });
      expect(await focused(page)).toMatchObject({ tag: 'article', name: '/home/clinic/scans/chair 1 to Jane Roe' });

      // "Stop syncing", confirmed: the focus goes to the next folder's card, not to the top of the screen.
      await tabTo(page, (stop) => stop.name === 'Stop syncing', '"Stop syncing"');
      await page.keyboard.press('Enter');
      await page.keyboard.press('Shift+Tab');
      expect(await focused(page)).toMatchObject({ name: 'Stop syncing' });
      await page.keyboard.press('Enter');
      await page.locator('.pair-card[data-pair-id="chair-1"]').waitFor({ state: 'detached' });
      await expect.poll(async () => (await focused(page)).name).toBe('/home/clinic/scans/chair 2 to Jane Roe');
      await expect.poll(heard).toBe('Stopped syncing /home/clinic/scans/chair 1. Files already uploaded stay on the server.');

      // The last one: the focus goes to "Add folder" of the empty list.
      await tabTo(page, (stop) => stop.name === 'Stop syncing', '"Stop syncing" of the last folder');
      await page.keyboard.press('Enter');
      await page.keyboard.press('Shift+Tab');
      await page.keyboard.press('Enter');
      await page.getByText('No folders are synced yet').waitFor();
      await expect.poll(async () => (await focused(page)).name).toBe('Add folder');
    } finally {
      await app.close();
    }
  });

  it('finds a patient, walks the folder tree with the arrows, filters, opens the details, a preview and a download, and comes back to the list', async () => {
    const documents = [
      documentDto({ fileName: 'order-form.pdf', path: '/reports', storageDownloadUri: 'http://patient-docs.test/content/order-form.pdf?signature=x' }, 1),
      documentDto({ fileName: 'upper-arch.stl', path: '/scans/2026-03-12 Upper arch' }, 2),
      documentDto({ fileName: 'lower-arch.stl', path: '/scans/2026-03-12 Upper arch' }, 3),
    ];
    const patients = [patient('Jane Roe', 1), patient('John Doe', 2)];
    const app = await openRenderer(browser, {
      listPatients: (query) => {
        const found = patients.filter((entry) => !query.name || entry.name.toLowerCase().includes(query.name.toLowerCase()));
        return { patients: found, total: found.length, offset: 0, limit: 100 };
      },
      searchDocuments: (patientId, body: SearchBody) => {
        const query = body as SearchBody & { path?: string; fileName?: string; id?: string[] };
        const found = (patientId === patients[0]!.id ? documents : []).filter(
          (document) =>
            (!query.id || query.id.includes(document.id)) &&
            (!query.path || query.path === '/' || document.path === query.path || document.path.startsWith(`${query.path}/`)) &&
            (!query.fileName || document.fileName.includes(query.fileName)),
        );
        return { documents: found, total: found.length, offset: 0, limit: 100 };
      },
      saveDocument: () => '/home/clinic/Downloads/order-form.pdf',
    });
    try {
      const page = app.page;
      await page.getByText('No folders are synced yet').waitFor();
      await tabTo(page, (stop) => stop.name === 'Patients', 'the Patients screen', { max: 5 });
      await page.keyboard.press('Enter');
      await tabTo(page, (stop) => stop.id === 'patient-search-full', 'the patient search');
      await page.keyboard.type('Jane');
      await expect.poll(() => page.locator('.patient-option').count()).toBe(1);
      await page.keyboard.press('ArrowDown');
      await page.keyboard.press('Enter');
      await page.getByTestId('document-count').filter({ hasText: '3 files' }).waitFor();

      // The tree: one Tab stop, the arrows move, → opens, Enter shows a folder's files.
      await tabTo(page, (stop) => stop.role === 'treeitem', 'the folder tree');
      expect((await focused(page)).name).toBe('All files, 3 files');
      await page.keyboard.press('ArrowDown');
      expect((await focused(page)).name).toBe('reports, 1 file');
      await page.keyboard.press('ArrowDown');
      await page.keyboard.press('ArrowRight');
      await page.keyboard.press('ArrowRight');
      expect((await focused(page)).name).toBe('2026-03-12 Upper arch, 2 files');
      await page.keyboard.press('Enter');
      await page.getByTestId('document-count').filter({ hasText: '2 files' }).waitFor();
      await page.keyboard.press('Home');
      await page.keyboard.press('Enter');
      await page.getByTestId('document-count').filter({ hasText: '3 files' }).waitFor();

      // Filter by name, then clear it.
      await tabTo(page, (stop) => stop.id === 'document-name-filter', 'the name filter');
      await page.keyboard.type('order');
      await page.getByTestId('document-count').filter({ hasText: /^1 file$/ }).waitFor();
      await page.keyboard.press('Escape'); // a search field clears itself on Escape
      await page.getByTestId('document-count').filter({ hasText: '3 files' }).waitFor();

      // The file list: an arrow makes a row active, Enter opens its details and the focus goes there.
      await tabTo(page, (stop) => stop.role === 'listbox' && stop.name === 'Files', 'the file list');
      await page.keyboard.press('Home');
      await page.keyboard.press('Enter');
      await page.locator('.details-panel').waitFor();
      expect(await focused(page)).toMatchObject({ tag: 'h2', name: 'order-form.pdf' });

      // Preview by keyboard: the focus goes into the dialog, Escape closes it and the focus is back.
      await tabTo(page, (stop) => stop.name === 'Preview', 'Preview', { max: 5 });
      await page.keyboard.press('Enter');
      const dialog = page.getByRole('dialog', { name: 'order-form.pdf' });
      await dialog.waitFor();
      expect(await page.evaluate(() => !!document.activeElement?.closest('dialog'))).toBe(true);
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'hidden' });
      await expect.poll(async () => (await focused(page)).name).toBe('Preview');

      // Download (the desktop saves through the engine and says where).
      await tabTo(page, (stop) => stop.name === 'Download', 'Download', { max: 3 });
      await page.keyboard.press('Enter');
      await page.getByText('Saved to /home/clinic/Downloads/order-form.pdf').waitFor();

      // Escape closes the details, and the focus is back on the file list.
      await page.keyboard.press('Escape');
      await page.locator('.details-panel').waitFor({ state: 'detached' });
      expect(await focused(page)).toMatchObject({ role: 'listbox', name: 'Files' });
    } finally {
      await app.close();
    }
  });
});
