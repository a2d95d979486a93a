// Builds the React renderer with Vite into dist/renderer (served by the headless twin, loaded by Electron).
import { build } from 'vite';
import { existsSync } from 'node:fs';

if (!existsSync(new URL('../renderer/index.html', import.meta.url))) {
  console.log('renderer: no renderer/index.html yet, skipping the UI build');
} else {
  await build({ configFile: new URL('../renderer/vite.config.ts', import.meta.url).pathname, logLevel: 'warn' });
}
