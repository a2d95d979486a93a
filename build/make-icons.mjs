// Rasterises build/icon.svg with headless Chromium into the PNG and ICO files electron-builder and
// the tray use. Run: node build/make-icons.mjs (needs /usr/bin/chromium or CHROMIUM_PATH).
import { readFileSync, writeFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

const here = new URL('.', import.meta.url);
const svg = readFileSync(new URL('icon.svg', here), 'utf8');
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
const page = await browser.newPage();

async function render(size) {
  await page.setViewportSize({ width: size, height: size });
  await page.setContent(`<html><body style="margin:0;background:transparent">${svg.replace('<svg ', `<svg width="${size}" height="${size}" `)}</body></html>`);
  return page.screenshot({ omitBackground: true, clip: { x: 0, y: 0, width: size, height: size } });
}

/** An ICO whose entries are PNGs (Windows Vista and later read these). */
function ico(images) {
  const header = Buffer.alloc(6 + images.length * 16);
  header.writeUInt16LE(0, 0);
  header.writeUInt16LE(1, 2);
  header.writeUInt16LE(images.length, 4);
  let offset = header.length;
  images.forEach(({ size, png }, index) => {
    const entry = 6 + index * 16;
    header.writeUInt8(size >= 256 ? 0 : size, entry);
    header.writeUInt8(size >= 256 ? 0 : size, entry + 1);
    header.writeUInt16LE(1, entry + 4);
    header.writeUInt16LE(32, entry + 6);
    header.writeUInt32LE(png.length, entry + 8);
    header.writeUInt32LE(offset, entry + 12);
    offset += png.length;
  });
  return Buffer.concat([header, ...images.map(({ png }) => png)]);
}

writeFileSync(new URL('icon.png', here), await render(512));
writeFileSync(new URL('tray.png', here), await render(32));
writeFileSync(new URL('tray@2x.png', here), await render(64));
const icoSizes = [16, 24, 32, 48, 64, 128, 256];
const images = [];
for (const size of icoSizes) images.push({ size, png: await render(size) });
writeFileSync(new URL('icon.ico', here), ico(images));
await browser.close();
console.log('icons written to build/');
