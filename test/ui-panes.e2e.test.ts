// The patient browser's side columns in real Chromium at the sizes of a scanner PC (1366×768, and
// the same screen at 125 % display scaling), against a scripted engine: the folder tree and the
// details panel are made wider by dragging their handle or by the keyboard (a focusable separator
// whose value is the width), folded away and back, and stay as staff left them after a restart.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DocumentDto, SearchBody } from '../shared/schemas.js';
import { documentDto, launchBrowser, openRenderer, paintedScreenshot, patient, type RendererPage } from './helpers/renderer-page.js';

const SCREENS = path.resolve(import.meta.dirname, 'artifacts/screens');
const SIZES = [
  { label: '1366', width: 1366, height: 768, deviceScaleFactor: 1 },
  { label: '1366-125', width: 1093, height: 614, deviceScaleFactor: 1.25 },
] as const;

const JANE = patient('Jane Pearson', 1);
const THREE_SHAPE = ['80021_20180115_0934_Pearson_0.stl', '80021_20180115_0934_Pearson_1.stl'];
const DOCUMENTS: DocumentDto[] = [
  ...THREE_SHAPE.map((fileName, index) => documentDto({ fileName, path: '/scans/OrthoCAD_Export_2026-03-11_Case_0001', scannedAt: '2026-03-11T16:45:00.000Z' }, index + 1)),
  documentDto({ fileName: 'Referral Dr Meyer.pdf', path: '/scans/OrthoCAD_Export_2026-03-11_Case_0002' }, 3),
];

function searchDocuments(_patientId: string, body: SearchBody) {
  const found = DOCUMENTS.filter((document) => (!body.id || body.id.includes(document.id)) && (!body.path || body.path === '/' || document.path === body.path || document.path.startsWith(`${body.path}/`)));
  return { documents: found, total: found.length, offset: body.offset ?? 0, limit: body.limit ?? 50 };
}

let browser: Browser;
beforeAll(async () => {
  mkdirSync(SCREENS, { recursive: true });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
});

function screenshot(page: Page, name: string): Promise<void> {
  return paintedScreenshot(page, path.join(SCREENS, `panes-${name}.png`));
}

const widthOf = async (locator: Locator) => (await locator.boundingBox())!.width;

/** Pulls a handle sideways with the mouse, in steps, as a hand would. */
async function drag(page: Page, handle: Locator, dx: number): Promise<void> {
  const box = (await handle.boundingBox())!;
  const [x, y] = [box.x + box.width / 2, box.y + box.height / 2];
  await page.mouse.move(x, y);
  await page.mouse.down();
  await page.mouse.move(x + dx / 2, y, { steps: 4 });
  await page.mouse.move(x + dx, y, { steps: 4 });
  await page.mouse.up();
}

for (const size of SIZES) {
  describe(`side columns at ${size.width}×${size.height}, scale ${size.deviceScaleFactor}`, () => {
    let app: RendererPage;
    beforeAll(async () => {
      app = await openRenderer(browser, { listPatients: () => ({ patients: [JANE], total: 1, offset: 0, limit: 100 }), searchDocuments }, size);
    });
    afterAll(async () => {
      await app?.close();
    });

    const tree = () => app.page.locator('.browser-tree');
    const details = () => app.page.locator('.details-panel');
    const treeHandle = () => app.page.getByRole('separator', { name: 'Width of the folder tree' });
    const detailsHandle = () => app.page.getByRole('separator', { name: 'Width of the details' });
    const valueOf = async (handle: Locator) => Number(await handle.getAttribute('aria-valuenow'));

    async function openPatient(): Promise<void> {
      await app.page.getByRole('button', { name: 'Patients', exact: true }).click();
      await app.page.locator('.patient-option').first().click();
      await app.page.getByTestId('document-count').filter({ hasText: /^3 files$/ }).waitFor();
    }

    /** The app started again on this computer (the page loaded anew, its storage kept). */
    async function restart(): Promise<void> {
      await app.page.reload();
      await openPatient();
    }

    it('the folder tree: wider by keyboard and by drag, folded away and back by Enter and by its buttons, as left after a restart', async () => {
      const page = app.page;
      await openPatient();
      const start = await widthOf(tree());
      const handle = treeHandle();
      await handle.focus();
      await page.keyboard.press('ArrowRight');
      await expect.poll(() => widthOf(tree())).toBeGreaterThan(start + 20);
      expect(await valueOf(handle)).toBe(Math.round(await widthOf(tree())));
      const keyed = await widthOf(tree());
      await drag(page, handle, 60);
      await expect.poll(() => widthOf(tree())).toBeGreaterThan(keyed + 50);
      const dragged = await widthOf(tree());
      expect(Math.abs((await valueOf(handle)) - dragged)).toBeLessThanOrEqual(1);

      // Enter folds it to a strip; the files get the room.
      const files = await widthOf(page.locator('.document-table'));
      await handle.focus();
      await page.keyboard.press('Enter');
      await expect.poll(() => widthOf(tree())).toBeLessThan(50);
      expect(await valueOf(handle)).toBe(0);
      expect(await widthOf(page.locator('.document-table'))).toBeGreaterThan(files + dragged - 60);
      await screenshot(page, `tree-folded-${size.label}`);
      // Remembered: folded after a restart, and unfolded by its button at the width it had.
      await restart();
      await expect.poll(() => widthOf(tree())).toBeLessThan(50);
      await page.getByRole('button', { name: 'Show folders' }).click();
      await expect.poll(() => widthOf(tree())).toBeGreaterThan(dragged - 2);
      expect(await widthOf(tree())).toBeLessThan(dragged + 2);
      // Folding by the header's button leaves the keyboard on the button that unfolds it.
      await page.getByRole('button', { name: 'Hide folders' }).click();
      await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Show folders');
      await page.keyboard.press('Enter');
      await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Hide folders');
      await page.getByRole('treeitem').first().waitFor();
      await restart();
      expect(Math.abs((await widthOf(tree())) - dragged)).toBeLessThanOrEqual(2);
      await treeHandle().press('Home');
    });

    it('the details: wider by keyboard and by drag, folded to a strip and back, as left after a restart; the long name reads whole', async () => {
      const page = app.page;
      await page.locator(`.document-row[data-document="${THREE_SHAPE[1]}"]`).click();
      await page.locator('.details-title').waitFor();
      const start = await widthOf(details());
      const handle = detailsHandle();
      await handle.focus();
      // Left moves the handle left: the details, on its right, grow.
      await page.keyboard.press('ArrowLeft');
      await expect.poll(() => widthOf(details())).toBeGreaterThan(start + 20);
      const keyed = await widthOf(details());
      expect(Math.abs((await valueOf(handle)) - keyed)).toBeLessThanOrEqual(1);
      await drag(page, handle, -40);
      await expect.poll(() => widthOf(details())).toBeGreaterThan(keyed + 30);
      const dragged = await widthOf(details());
      expect(await page.locator('.details-title').innerText()).toBe(THREE_SHAPE[1]);
      await screenshot(page, `details-wider-${size.label}`);

      // Folded to a strip: the files take the room, the strip still names the file.
      const names = await widthOf(page.locator(`.document-row[data-document="${THREE_SHAPE[0]}"] .col-name`));
      await page.getByRole('button', { name: 'Hide details' }).click();
      await expect.poll(() => widthOf(details())).toBeLessThan(50);
      expect(await widthOf(page.locator(`.document-row[data-document="${THREE_SHAPE[0]}"] .col-name`))).toBeGreaterThan(names + 100);
      expect(await page.getByRole('complementary', { name: `Details of ${THREE_SHAPE[1]}` }).count()).toBe(1);
      expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Show details');
      expect(await valueOf(handle)).toBe(0);
      await screenshot(page, `details-folded-${size.label}`);

      // Remembered: a file opened after a restart opens folded; Enter on the handle unfolds it at its width.
      await restart();
      await page.locator(`.document-row[data-document="${THREE_SHAPE[0]}"]`).click();
      await expect.poll(() => widthOf(details())).toBeLessThan(50);
      await detailsHandle().focus();
      await page.keyboard.press('Enter');
      await page.locator('.details-title').waitFor();
      await expect.poll(() => widthOf(details())).toBeGreaterThan(dragged - 2);
      expect(await widthOf(details())).toBeLessThan(dragged + 2);
      await restart();
      await page.locator(`.document-row[data-document="${THREE_SHAPE[0]}"]`).click();
      await page.locator('.details-title').waitFor();
      expect(Math.abs((await widthOf(details())) - dragged)).toBeLessThanOrEqual(2);
      await page.evaluate(() => window.localStorage.clear());
    });
  });
}
