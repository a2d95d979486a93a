// The default set-up, as a clinic starts it: the real headless app with its embedded server and
// the demo folder, in Chromium at 1366×768. Without any public address, the server's notifications
// reach this computer over loopback and show in Activity.
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoFolderBeside, launchHeadless, type HeadlessApp } from '../electron/headless/main.js';
import { makeArchStl } from './fixtures/scans.js';
import { freePort, ROOT } from './helpers/processes.js';
import { closeContexts, useBrowser } from './helpers/renderer-page.js';
import { tempDir } from './helpers/server.js';

const SCREENS = path.join(ROOT, 'test/artifacts/screens');

let home: string;
let headless: HeadlessApp;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  home = tempDir('clinic-day-embedded');
  // Chromium starts while the app and its embedded server do: it needs neither.
  const launching = useBrowser();
  try {
    headless = await launchHeadless({ home, rendererDir: path.join(ROOT, 'dist/renderer'), log: () => undefined });
    // A port of its own (tests run side by side); the listener restarts and subscribes again.
    await headless.app.updateSettings({ settleMs: 300, webhook: { port: await freePort() } });
  } finally {
    browser = await launching;
  }
  page = await browser.newPage({ viewport: { width: 1366, height: 768 }, locale: 'en-GB' });
  fs.mkdirSync(SCREENS, { recursive: true });
});
afterAll(async () => {
  await closeContexts(browser);
  await headless?.stop();
  fs.rmSync(demoFolderBeside(home), { recursive: true, force: true });
});

async function screenshot(name: string): Promise<void> {
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  await page.screenshot({ path: path.join(SCREENS, `clinic-day-${name}.png`) });
}

describe('the default embedded set-up', () => {
  it('subscribes over loopback, and a notification for a dropped scan arrives in Activity', async () => {
    await expect.poll(async () => (await headless.app.status()).webhook, { timeout: 20_000 }).toMatchObject({ listening: true, subscribed: true, error: null });
    await page.goto(headless.openUrl);
    await page.getByRole('heading', { name: 'Sync', level: 1 }).waitFor();
    // The first run says what to do next, where, and that its patient is a demo.
    const welcome = page.getByTestId('welcome');
    await welcome.waitFor();
    const [pair] = headless.app.engine.pairViews();
    expect(await welcome.innerText()).toContain('Next step: drop a scan into this folder.');
    expect(await welcome.innerText()).toContain(pair!.folder);
    expect(await welcome.innerText()).toContain('Demo Patient is a demo patient');
    await screenshot('first-run-1366');

    fs.writeFileSync(path.join(pair!.folder, '80021_20180115_0934_Pearson_0.stl'), makeArchStl({ triangles: 500 }));
    await page.getByText('The file is synced and verified').waitFor({ timeout: 30_000 });
    expect(await welcome.count()).toBe(0);

    await page.getByRole('button', { name: 'Activity', exact: true }).click();
    const notification = page.locator('tr[data-verdict="accepted"][data-event-type^="document."]').first();
    await notification.waitFor({ timeout: 30_000 });
    await screenshot('activity-embedded-1366');

    await page.getByRole('button', { name: 'Settings', exact: true }).click();
    await page.getByText('subscribed on the server').waitFor();
    expect(await page.getByText('Not subscribed — needs a public address').count()).toBe(0);
    await screenshot('settings-embedded-1366');
  }, 120_000);
});
