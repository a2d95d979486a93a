// The renderer bundle: served by the headless twin on loopback and loaded from disk by Electron,
// hence relative asset URLs (base './'). No node:* imports: this file sits in the renderer layer.
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

const here = (relative: string): string => decodeURIComponent(new URL(relative, import.meta.url).pathname);

export default defineConfig({
  root: here('.'),
  base: './',
  plugins: [react()],
  build: {
    outDir: here('../dist/renderer'),
    emptyOutDir: true,
    chunkSizeWarningLimit: 1200,
  },
  server: { host: '127.0.0.1' },
});
