// axe-core on every screen and state, in real Chromium against a scripted engine
// (test/helpers/renderer-page.ts): first run and connection, folder cards in each state (synced,
// syncing, waiting, failed, disk full, paused), the add-folder dialog, the patient browser (tree,
// filters, table, thumbnails, details, PDF preview, 3D viewer, a failed download), settings, activity
// and the error banners — at 1440×900 and 360 px wide; the layout test checks 200% zoom of 1024×768 (512×384 CSS pixels) too.
// A serious or critical violation fails the test, and so do the moderate ones fixed once (so they stay fixed).
// Then what a screen reader hears when files sync or fail: one summary, not one line per file.
// Last, the keyboard alone: staff at the chair connect, add a folder, retry a failed file, find a
// patient, move through the folder tree, filter, open and close a preview and download — Tab,
// arrows, Enter and Escape, no mouse. Every stop of the Tab key must show where the focus is, and the
// focus must never fall back to the page when the control that had it goes away.
import type { Browser, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { PLAIN_MESSAGES } from '../shared/bridge-errors.js';
import type { CaseView, HistoryFileView, PairView, WebhookActivityView } from '../shared/bridge.js';
import type { DocumentDto, SearchBody } from '../shared/schemas.js';
import { makeArchStl, makePdf, makePng } from './fixtures/scans.js';
import { axeFindings, describeFindings, type AxeFinding } from './helpers/axe.js';
import { counts, documentDto, fileView, openRenderer, pairView, patient, Refusal, STATUS, useBrowser, type Handlers } from './helpers/renderer-page.js';

const WIDE = { name: '1440×900', width: 1440, height: 900 } as const;
const PHONE = { name: '360 wide', width: 360, height: 740 } as const;
/** 200% zoom of a 1024×768 window: what the page gets is 512×384 CSS pixels. */
const ZOOMED = { name: '200% of 1024×768', width: 512, height: 384 } as const;

let browser: Browser;
beforeAll(async () => {
  browser = await useBrowser();
});




const PATIENTS = [patient('Jane Roe', 1), patient('Maximiliane Alexandra von Hohenzollern-Sigmaringen', 2)];
const THUMBNAIL = makePng(64, 64);
const DOCUMENTS: DocumentDto[] = [
  documentDto({ fileName: 'upper-arch.stl', path: '/scans/2026-03-12 Upper arch', storageDownloadUri: 'http://patient-docs.test/content/upper-arch.stl?signature=x', thumbnailDownloadUri: 'http://patient-docs.test/thumbnails/upper-arch.png?signature=x' }, 1),
  documentDto({ fileName: 'order-form.pdf', path: '/reports', storageDownloadUri: 'http://patient-docs.test/content/order-form.pdf?signature=x' }, 2),
  documentDto({ fileName: 'lower-arch.stl', path: '/scans/2026-03-12 Upper arch', hasContent: false }, 3),
];

function browsing(): Handlers {
  return {
    listPatients: (query) => {
      const found = PATIENTS.filter((entry) => !query.name || entry.name.toLowerCase().includes(query.name.toLowerCase()));
      return { patients: found, total: found.length, offset: 0, limit: 100 };
    },
    searchDocuments: (patientId, body: SearchBody) => {
      const query = body as SearchBody & { path?: string; fileName?: string; id?: string[] };
      const found = (patientId === PATIENTS[0]!.id ? DOCUMENTS : []).filter(
        (document) => (!query.id || query.id.includes(document.id)) && (!query.path || query.path === '/' || document.path.startsWith(query.path)) && (!query.fileName || document.fileName.includes(query.fileName)),
      );
      return { documents: found, total: found.length, offset: 0, limit: 100 };
    },
  };
}

/** Folder cards in each state a clinic meets. */
function cards(): { pairs: PairView[]; handlers: Handlers } {
  const upper: CaseView = { path: '2026-03-12 Upper arch', counts: counts({ synced: 2 }), bytesDone: 2000, bytesTotal: 2000 } as CaseView;
  const pairs = [
    pairView({ id: 'synced', state: 'idle', counts: counts({ synced: 2 }), bytesDone: 2000, bytesTotal: 2000, cases: [upper] }),
    pairView({ id: 'syncing', folder: '/home/clinic/scans/chair 2', state: 'syncing', counts: counts({ uploading: 1, verifying: 1, waiting: 1, queued: 1 }), bytesDone: 500, bytesTotal: 4000, rateBytesPerSecond: 1000, etaSeconds: 4, retryReason: { code: 'UNREACHABLE', message: PLAIN_MESSAGES.UNREACHABLE }, settling: 1 }),
    pairView({ id: 'failed', folder: '/home/clinic/scans/chair 3', state: 'attention', counts: counts({ failed: 3, synced: 1 }), failureReasons: [{ code: 'NO_CONSENT', message: PLAIN_MESSAGES.NO_CONSENT, count: 2 }, { code: 'INVALID_NAME', message: PLAIN_MESSAGES.INVALID_NAME, count: 1 }], unreadable: ['locked-by-scanner.stl'] }),
    pairView({ id: 'disk-full', folder: '/home/clinic/scans/chair 4', state: 'attention', counts: counts({ queued: 3 }), folderError: { code: 'DISK_FULL', message: PLAIN_MESSAGES.DISK_FULL }, lastError: { code: 'DISK_FULL', message: PLAIN_MESSAGES.DISK_FULL } }),
    pairView({ id: 'paused', folder: '/home/clinic/scans/chair 5', state: 'paused', paused: true, counts: counts({ queued: 2 }) }),
  ];
  const files: Record<string, ReturnType<typeof fileView>[]> = {
    synced: [fileView({ pairId: 'synced', relativePath: '2026-03-12 Upper arch/upper-arch.stl' })],
    syncing: [
      fileView({ pairId: 'syncing', relativePath: 'uploading.stl', state: 'uploading', bytesDone: 300, rate: 100, syncedAt: null }),
      fileView({ pairId: 'syncing', relativePath: 'verifying.stl', state: 'verifying', syncedAt: null }),
      fileView({ pairId: 'syncing', relativePath: 'waiting.stl', state: 'waiting', nextAttemptAt: Date.now() + 30_000, syncedAt: null, error: { code: 'UNREACHABLE', message: PLAIN_MESSAGES.UNREACHABLE } }),
    ],
    failed: [fileView({ pairId: 'failed', relativePath: 'no consent.stl', state: 'failed', syncedAt: null, error: { code: 'NO_CONSENT', message: PLAIN_MESSAGES.NO_CONSENT, detail: 'consent missing for organization' } })],
  };
  return { pairs, handlers: { listPairs: () => pairs, listFiles: (input) => ({ files: files[input.pairId] ?? [], total: (files[input.pairId] ?? []).length }) } };
}

describe('axe finds no serious or critical violation', () => {
  // One page per test; the narrow pass resizes the same page (opening a page costs seconds on a loaded machine).
  it('first run: the choice, the connection form with its field errors, a failed connection test, the embedded setup, and a start that fails', async () => {
    const findings: AxeFinding[] = [];
    const app = await openRenderer(browser, {
      getStatus: () => ({ ...STATUS, mode: 'unconfigured', server: null }),
      testConnection: () => ({ ok: false, step: 'authenticate', error: { code: 'BAD_CREDENTIALS', message: PLAIN_MESSAGES.BAD_CREDENTIALS, detail: 'invalid_client' } }) as never,
      setupEmbedded: () => {
        throw new Refusal('INTERNAL', 'The bundled server could not start.', 'EADDRINUSE');
      },
    });
    try {
      const page = app.page;
      await page.getByText('Where are the patient records kept?').waitFor();
      findings.push(...(await axeFindings(page, 'first run')));
      await page.getByText('Connect to a server').click();
      await page.getByRole('button', { name: 'Test connection' }).click();
      await page.locator('.field-error').first().waitFor();
      findings.push(...(await axeFindings(page, 'connection form, fields missing')));
      await page.getByLabel('Server address', { exact: true }).fill('https://docs.smile-clinic.example');
      await page.getByLabel('Client ID', { exact: true }).fill('scanner-pc-1');
      await page.getByLabel('Client secret', { exact: true }).fill('wrong');
      await page.getByLabel('Organization ID', { exact: true }).fill('0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01');
      await page.getByRole('button', { name: 'Test connection' }).click();
      await page.getByTestId('connection-result').waitFor();
      findings.push(...(await axeFindings(page, 'connection test failed')));
      await page.setViewportSize(PHONE);
      findings.push(...(await axeFindings(page, `connection test failed (${PHONE.name})`)));
      await page.setViewportSize(WIDE);
      await page.getByText('This computer runs the server').click();
      await page.getByRole('button', { name: 'Start the server here' }).click();
      await page.locator('.notice-danger').waitFor();
      findings.push(...(await axeFindings(page, 'embedded server failed to start')));
    } finally {
      await app.close();
    }
    const broken = await openRenderer(browser, {
      getStatus: () => {
        throw new Refusal('INTERNAL', 'The sync engine did not answer.');
      },
    });
    try {
      await broken.page.getByText('Patient Docs cannot start').waitFor();
      findings.push(...(await axeFindings(broken.page, 'cannot start')));
    } finally {
      await broken.close();
    }
    expect(findings, describeFindings(findings)).toEqual([]);
  });

  it('sync: folder cards synced, syncing, waiting, failed, disk full and paused, the stop question, the add-folder dialog and the empty list', async () => {
    const findings: AxeFinding[] = [];
    const { handlers } = cards();
    const app = await openRenderer(browser, { ...handlers, ...browsing(), getStatus: () => ({ ...STATUS, online: false, notices: ['The upload record was damaged by a power cut and has been rebuilt from the folders and the server.'] }) });
    try {
      const page = app.page;
      await page.locator('.pair-card').nth(4).waitFor();
      await page.locator('.file-row[data-state="failed"]').waitFor();
      findings.push(...(await axeFindings(page, 'folder cards')));
      await page.getByRole('button', { name: 'Details of no consent.stl' }).click();
      await page.getByRole('region', { name: 'Why no consent.stl could not be uploaded' }).waitFor();
      findings.push(...(await axeFindings(page, 'a failed file’s whole reason')));
      await page.locator('.pair-card').first().getByRole('button', { name: 'Stop syncing' }).click();
      findings.push(...(await axeFindings(page, 'stop syncing question')));
      await page.getByRole('button', { name: 'Add folder' }).first().click();
      await page.getByRole('dialog').getByRole('button', { name: 'Jane Roe', exact: true }).waitFor();
      findings.push(...(await axeFindings(page, 'add-folder dialog')));
      await page.setViewportSize(PHONE);
      findings.push(...(await axeFindings(page, `add-folder dialog (${PHONE.name})`)));
      await page.keyboard.press('Escape');
      await page.getByRole('dialog').waitFor({ state: 'hidden' });
      findings.push(...(await axeFindings(page, `folder cards (${PHONE.name})`)));
    } finally {
      await app.close();
    }
    const empty = await openRenderer(browser, {});
    try {
      await empty.page.getByText('No folders are synced yet').waitFor();
      findings.push(...(await axeFindings(empty.page, 'no folders yet')));
    } finally {
      await empty.close();
    }
    expect(findings, describeFindings(findings)).toEqual([]);
  });

  it('patient browser: list, tree, filters, table with thumbnails, details, a failed download, the PDF preview and the 3D viewer', async () => {
    const findings: AxeFinding[] = [];
    const stl = makeArchStl({ triangles: 2000 });
    const pdf = makePdf('Order form');
    const app = await openRenderer(browser, {
      ...browsing(),
      saveDocument: () => {
        throw new Refusal('NOT_FOUND', 'The file is no longer on the server.');
      },
    });
    const page = app.page;
    await page.route('**/content/**', (route) => route.fulfill({ status: 200, body: route.request().url().includes('.pdf') ? pdf : stl, contentType: route.request().url().includes('.pdf') ? 'application/pdf' : 'model/stl' }));
    await page.route('**/thumbnails/**', (route) => route.fulfill({ status: 200, body: THUMBNAIL, contentType: 'image/png' }));
    try {
      await page.getByRole('button', { name: 'Patients', exact: true }).click();
      await page.locator('.patient-option').nth(1).waitFor();
      findings.push(...(await axeFindings(page, 'choose a patient')));
      await page.getByRole('button', { name: 'Jane Roe' }).click();
      await page.getByTestId('document-count').filter({ hasText: '3 files' }).waitFor();
      await page.locator('img.thumbnail').first().waitFor();
      findings.push(...(await axeFindings(page, 'tree, filters, table')));
      await page.getByLabel('Filter by file name').fill('nothing-like-this');
      await page.getByText('No file matches').waitFor();
      findings.push(...(await axeFindings(page, 'no file matches')));
      await page.getByLabel('Filter by file name').fill('');
      await page.locator('.document-row[data-document="upper-arch.stl"]').click();
      await page.locator('.details-panel').waitFor();
      findings.push(...(await axeFindings(page, 'details')));
      // The open details sit beside the file table, not over it: every column shown (the Modified date
      // among them at 1440) is whole and uncovered, at 1440 and in the band just above the laptop layout.
      for (const width of [WIDE.width, 1280]) {
        await page.setViewportSize({ width, height: WIDE.height });
        expect(await covered(page), `file table cut or covered by the details at ${width} px`).toEqual([]);
        if (width === WIDE.width) expect(await page.locator('.document-row .col-scanned').first().isVisible(), 'the Scanned date shows at 1440 beside the details').toBe(true);
      }
      await page.setViewportSize(WIDE);
      await page.locator('.details-panel').getByRole('button', { name: 'Download' }).click();
      await page.getByText('The file cannot be downloaded').waitFor();
      findings.push(...(await axeFindings(page, 'download failed')));
      await page.getByRole('button', { name: 'View in 3D' }).click();
      await page.locator('[data-viewer-state="ready"], [data-viewer-state="failed"]').waitFor({ timeout: 20_000 });
      findings.push(...(await axeFindings(page, '3D viewer')));
      // The keyboard alone turns and zooms the model (the picture changes), and Escape still closes.
      expect(await page.locator('.model-canvas').getAttribute('data-viewer-state')).toBe('ready');
      const picture = () => page.locator('.model-canvas canvas').evaluate((canvas: HTMLCanvasElement) => canvas.toDataURL());
      await page.locator('.model-canvas').focus();
      for (const key of ['+', 'Shift+ArrowLeft', '-']) {
        const before = await picture();
        await page.keyboard.press(key);
        await expect.poll(picture, { message: `${key} changes the view` }).not.toBe(before);
      }
      await page.keyboard.press('Escape');
      await page.getByRole('dialog').waitFor({ state: 'hidden' });
      await page.getByRole('button', { name: 'Close details' }).click();
      await page.locator('.document-row[data-document="order-form.pdf"]').click();
      await page.getByRole('button', { name: 'Preview' }).click();
      await page.locator('iframe.pdf-frame').waitFor();
      findings.push(...(await axeFindings(page, 'PDF preview')));
      await page.keyboard.press('Escape');
      await page.getByRole('dialog').waitFor({ state: 'hidden' });
      await page.setViewportSize(PHONE);
      findings.push(...(await axeFindings(page, `details over the list (${PHONE.name})`)));
      await page.getByRole('button', { name: 'Close details' }).click();
      findings.push(...(await axeFindings(page, `patients, tree, files stacked (${PHONE.name})`)));
    } finally {
      await app.close();
    }
    expect(findings, describeFindings(findings)).toEqual([]);
  });

  it('settings (with a field error and a refused save) and activity (notifications, history, a file’s timeline)', async () => {
    const findings: AxeFinding[] = [];
    const activity: WebhookActivityView[] = [
      { id: 1, receivedAt: Date.parse('2026-03-12T10:00:00Z'), verdict: 'accepted', eventType: 'document.uploaded', patientId: PATIENTS[0]!.id, reason: null, messageId: 'msg_1' },
      { id: 2, receivedAt: Date.parse('2026-03-12T10:01:00Z'), verdict: 'rejected', eventType: null, patientId: null, reason: 'The signature does not match.', messageId: 'msg_2' },
    ] as WebhookActivityView[];
    const history = [{ ...fileView({ relativePath: 'case/upper-arch.stl' }), folder: '/home/clinic/scans/chair 1', patientName: 'Jane Roe', pairRemoved: false }] as HistoryFileView[];
    const app = await openRenderer(browser, {
      getStatus: () => ({ ...STATUS, secrets: { backend: 'encrypted-file', warning: 'No keychain is reachable; secrets are kept in an encrypted file.', clientSecretMissing: true }, webhook: { listening: false, localUrl: null, publicUrl: null, subscribed: false, error: 'Port 8787 is in use.' } }),
      updateSettings: () => {
        throw new Refusal('INVALID_INPUT', 'The request was not valid.', 'webhook port in use');
      },
      webhookActivity: () => activity,
      historyFiles: () => history,
      fileHistory: () => [{ at: Date.parse('2026-03-12T10:00:00Z'), event: 'Verified on the server', version: 1, detail: null, sha256: 'ab'.repeat(32) }] as never,
    });
    try {
      const page = app.page;
      await page.getByRole('button', { name: 'Settings', exact: true }).click();
      await page.getByLabel('Files at once').fill('0');
      await page.getByRole('button', { name: 'Save settings' }).click();
      await page.locator('.field-error').waitFor();
      findings.push(...(await axeFindings(page, 'settings, field error')));
      await page.getByLabel('Files at once').fill('2');
      await page.getByRole('button', { name: 'Save settings' }).click();
      await page.getByText('The settings were not saved').waitFor();
      findings.push(...(await axeFindings(page, 'settings, save refused')));
      await page.setViewportSize(PHONE);
      findings.push(...(await axeFindings(page, `settings, save refused (${PHONE.name})`)));
      await page.getByRole('button', { name: 'Activity', exact: true }).click();
      await page.locator('tr[data-verdict="rejected"]').waitFor();
      findings.push(...(await axeFindings(page, `server notifications (${PHONE.name})`)));
      await page.setViewportSize(WIDE);
      findings.push(...(await axeFindings(page, 'server notifications')));
      await page.getByRole('tab', { name: 'Sync history' }).click();
      await page.getByRole('button', { name: 'case/upper-arch.stl' }).click();
      await page.locator('.timeline-list li').waitFor();
      findings.push(...(await axeFindings(page, 'sync history and timeline')));
    } finally {
      await app.close();
    }
    expect(findings, describeFindings(findings)).toEqual([]);
  });
});

/** Every visible element `selector` matches lies within the window's width; names those that do not. */
async function outside(page: Page, selector: string): Promise<string[]> {
  return page.locator(selector).evaluateAll((elements) =>
    elements
      .filter((element) => element.getClientRects().length > 0)
      .map((element) => ({ element, box: element.getBoundingClientRect() }))
      .filter(({ box }) => box.left < -0.5 || box.right > window.innerWidth + 0.5 || box.width < 1)
      .map(({ element, box }) => `${element.className || element.tagName} "${(element.textContent ?? '').trim().slice(0, 30)}" at ${Math.round(box.left)}–${Math.round(box.right)} of ${window.innerWidth}`),
  );
}

/** File-table cells that are cut by the table's edge or lie under the open details panel. */
async function covered(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const table = document.querySelector('.document-table')!.getBoundingClientRect();
    const panel = document.querySelector('.details-panel')?.getBoundingClientRect();
    return [...document.querySelectorAll('.document-header .document-cell, .document-row .document-cell')]
      .filter((cell) => cell.getClientRects().length > 0)
      .map((cell) => ({ cell, box: cell.getBoundingClientRect() }))
      .filter(({ box }) => box.right > table.right + 0.5 || box.left < table.left - 0.5 || (panel && box.right > panel.left + 0.5 && box.left < panel.right - 0.5))
      .map(({ cell, box }) => `${cell.className} "${(cell.textContent ?? '').trim().slice(0, 20)}" at ${Math.round(box.left)}–${Math.round(box.right)} (table to ${Math.round(table.right)}, details from ${Math.round(panel?.left ?? NaN)})`);
  });
}

/** Neither the page nor the main area scrolls sideways (a table inside its own scroller may). */
async function sideways(page: Page): Promise<number> {
  return page.evaluate(() => {
    const main = document.getElementById('main');
    return Math.max(document.documentElement.scrollWidth - window.innerWidth, main ? main.scrollWidth - main.clientWidth : 0);
  });
}

describe('small windows: 200% zoom of 1024×768 and 360 px wide', () => {
  it('navigation, folder cards with Retry, the add-folder dialog, the patient browser with details, and settings fit the width', async () => {
    for (const size of [ZOOMED, PHONE]) {
      const { handlers } = cards();
      const app = await openRenderer(browser, { ...handlers, ...browsing(), saveDocument: () => '/home/clinic/Downloads/upper-arch.stl' }, size);
      try {
        const page = app.page;
        await page.locator('.file-row[data-state="failed"]').waitFor();
        expect(await sideways(page), `sync screen scrolls sideways (${size.name})`).toBeLessThanOrEqual(1);
        expect(await outside(page, '.nav-item, .pair-card, .pair-route, .pair-card .button, .notice, .file-row .badge, .file-row-name')).toEqual([]);
        const nav = await page.locator('.nav-item').evaluateAll((items) => items.map((item) => item.getBoundingClientRect()).map((box) => [box.left, box.top, box.right, box.bottom] as const));
        const overlapping = nav.some((a, i) => nav.some((b, j) => i < j && a[0] < b[2] - 0.5 && b[0] < a[2] - 0.5 && a[1] < b[3] - 0.5 && b[1] < a[3] - 0.5));
        expect(overlapping, `navigation buttons overlap (${size.name})`).toBe(false);

        await page.getByRole('button', { name: 'Add folder' }).first().click();
        const dialog = page.getByRole('dialog');
        await dialog.getByRole('button', { name: 'Jane Roe', exact: true }).click();
        await dialog.getByLabel('Scan folder').fill('/home/clinic/scans/chair 9');
        const submit = dialog.getByRole('button', { name: 'Sync to Jane Roe' });
        await submit.scrollIntoViewIfNeeded();
        expect(await outside(page, 'dialog[open], dialog[open] .button, dialog[open] input')).toEqual([]);
        await page.keyboard.press('Escape');

        await page.getByRole('button', { name: 'Patients', exact: true }).click();
        await page.getByRole('button', { name: 'Jane Roe' }).click();
        await page.getByTestId('document-count').filter({ hasText: '3 files' }).waitFor();
        expect(await sideways(page), `patient browser scrolls sideways (${size.name})`).toBeLessThanOrEqual(1);
        expect(await outside(page, '.browser-patients, .folder-tree, .browser-files, .document-row .col-name, .document-row .col-size, .toolbar input, .toolbar select')).toEqual([]);
        expect((await page.locator('.document-row .document-name').first().boundingBox())!.width, 'room for a file name').toBeGreaterThan(120);
        expect((await page.locator('.folder-tree').boundingBox())!.height, 'room for the folders').toBeGreaterThan(120);
        await page.locator('.document-row').first().click();
        await page.locator('.details-panel').waitFor();
        expect(await outside(page, '.details-panel, .details-panel .button, .details-panel .icon-button, .details-list dd')).toEqual([]);
        // The details cover the window: Tab stays on what is shown (the list and the navigation underneath are inert).
        const tabbed: string[] = [];
        for (let press = 0; press < 6; press += 1) {
          await page.keyboard.press('Tab');
          tabbed.push(await page.evaluate(() => (document.activeElement === document.body ? 'page' : document.activeElement?.closest('.details-panel') ? 'details' : `${document.activeElement?.className} (under the details)`)));
        }
        expect(tabbed.filter((where) => where !== 'details' && where !== 'page'), `Tab went under the details (${size.name})`).toEqual([]);
        await page.locator('.details-panel').getByRole('button', { name: 'Download' }).click();
        await page.getByText('Saved to /home/clinic/Downloads/upper-arch.stl').waitFor();
        await page.getByRole('button', { name: 'Close details' }).click();

        await page.getByRole('button', { name: 'Settings', exact: true }).click();
        await page.getByLabel('Files at once').waitFor();
        expect(await sideways(page), `settings scroll sideways (${size.name})`).toBeLessThanOrEqual(1);
        expect(await outside(page, '.settings-section, .field input, .field select, .field textarea, .form-actions .button')).toEqual([]);
      } finally {
        await app.close();
      }
    }
  });
});

describe('what a screen reader hears', () => {
  it('a burst of synced and failed files is said once per folder, politely, after it settles; a folder problem that starts is said too', async () => {
    const pair = pairView({ state: 'syncing', counts: counts({ uploading: 4 }) });
    const files = Array.from({ length: 4 }, (_, index) => fileView({ relativePath: `scan-${index + 1}.stl`, state: 'uploading', syncedAt: null }));
    const app = await openRenderer(browser, { listPairs: () => [pair], listFiles: () => ({ files, total: files.length }) });
    try {
      const page = app.page;
      const region = page.getByTestId('sync-announcements');
      await page.locator('.file-row').nth(3).waitFor();
      expect(await region.getAttribute('aria-live')).toBe('polite');
      expect(await region.getAttribute('role')).toBe('status');
      // Record every text the region shows, so a message per file in between would be seen.
      await page.evaluate(() => {
        const said: string[] = [];
        (window as unknown as { said: string[] }).said = said;
        const node = document.querySelector('[data-testid="sync-announcements"]')!;
        new MutationObserver(() => node.textContent && said.push(node.textContent)).observe(node, { childList: true, characterData: true, subtree: true });
      });
      // Progress alone is not announced.
      await app.emit([{ type: 'files', pairId: pair.id, files: files.map((file) => ({ ...file, bytesDone: 500 })) }]);
      await app.emit([
        { type: 'files', pairId: pair.id, files: [{ ...files[0]!, state: 'synced', syncedAt: Date.now() }, { ...files[1]!, state: 'synced', syncedAt: Date.now() }] },
        { type: 'files', pairId: pair.id, files: [{ ...files[2]!, state: 'synced', syncedAt: Date.now() }] },
        { type: 'files', pairId: pair.id, files: [{ ...files[3]!, state: 'failed', error: { code: 'NO_CONSENT', message: PLAIN_MESSAGES.NO_CONSENT } }] },
      ]);
      const expected = 'chair 1 to Jane Roe: 3 files synced and verified, 1 file could not be uploaded.';
      await expect.poll(() => region.textContent(), { timeout: 10_000 }).toBe(expected);
      expect(await page.evaluate(() => (window as unknown as { said: string[] }).said)).toEqual([expected]);

      // The disk fills: said once, in the words of the card.
      await app.emit([{ type: 'pairs', pairs: [{ ...pair, state: 'attention', folderError: { code: 'DISK_FULL', message: PLAIN_MESSAGES.DISK_FULL } }] }]);
      await expect.poll(() => region.textContent(), { timeout: 10_000 }).toBe(`chair 1 to Jane Roe: ${PLAIN_MESSAGES.DISK_FULL}`.replace(/\.?$/, '.'));
    } finally {
      await app.close();
    }
  });

  it('scans the re-check found missing on the server: one uploaded again is said so (not as newly synced), once; one gone shows when that was found, in the card and the history', async () => {
    const syncedLongAgo = Date.parse('2025-01-05T09:00:00Z');
    const foundMissing = Date.parse('2026-11-22T12:40:00Z');
    const pair = pairView({ state: 'syncing', counts: counts({ uploading: 1, synced: 2 }) });
    const upper = fileView({ relativePath: 'upper.stl', state: 'uploading', syncedAt: syncedLongAgo, lostAt: foundMissing });
    const fresh = fileView({ relativePath: 'new-scan.stl', state: 'uploading', syncedAt: null });
    const lower = fileView({ relativePath: 'lower.stl', state: 'synced', syncedAt: syncedLongAgo });
    const lowerLost = { ...lower, state: 'failed' as const, updatedAt: foundMissing, lostAt: foundMissing, error: { code: 'LOST_ON_SERVER' as const, message: PLAIN_MESSAGES.LOST_ON_SERVER } };
    const files = [upper, fresh, lower];
    const history = [{ ...lowerLost, folder: pair.folder, patientName: 'Jane Roe', pairRemoved: false }] as HistoryFileView[];
    const app = await openRenderer(browser, { listPairs: () => [pair], listFiles: () => ({ files, total: files.length }), historyFiles: () => history, fileHistory: () => [] });
    try {
      const page = app.page;
      const region = page.getByTestId('sync-announcements');
      await page.locator('.file-row').nth(2).waitFor();
      await page.evaluate(() => {
        const said: string[] = [];
        (window as unknown as { said: string[] }).said = said;
        const node = document.querySelector('[data-testid="sync-announcements"]')!;
        new MutationObserver(() => node.textContent && said.push(node.textContent)).observe(node, { childList: true, characterData: true, subtree: true });
      });
      await app.emit([
        { type: 'files', pairId: pair.id, files: [{ ...upper, state: 'synced', syncedAt: Date.now() }] },
        { type: 'files', pairId: pair.id, files: [{ ...fresh, state: 'synced', syncedAt: Date.now() }] },
        { type: 'files', pairId: pair.id, files: [lowerLost] },
      ]);
      const expected = 'chair 1 to Jane Roe: 1 file synced and verified, 1 scan found missing on the server was uploaded again, 1 scan is no longer on the server.';
      await expect.poll(() => region.textContent(), { timeout: 10_000 }).toBe(expected);
      expect(await page.evaluate(() => (window as unknown as { said: string[] }).said)).toEqual([expected]);

      // The card: when it was found missing, not the old "synced" date that reads as if it were fine.
      const row = page.locator('.file-row[data-file="lower.stl"][data-state="failed"]');
      await row.waitFor();
      const rowText = await row.locator('.file-row-progress').innerText();
      expect(rowText).toMatch(/found missing .*2026/);
      expect(rowText).not.toContain('2025');
      // The sync history says the same.
      await page.getByRole('button', { name: 'Activity', exact: true }).click();
      await page.getByRole('tab', { name: 'Sync history' }).click();
      const cell = page.locator('td[data-column="verified"]');
      await cell.waitFor();
      expect(await cell.innerText()).toMatch(/^Found missing .*2026/);
      expect(await cell.innerText()).not.toContain('2025');
    } finally {
      await app.close();
    }
  });
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
