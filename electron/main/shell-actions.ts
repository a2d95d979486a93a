/** The desktop-only abilities the engine asks of its shell: dialogs, the file manager, saving a download. */
import { createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { dialog, shell, type BrowserWindow } from 'electron';
import type { ShellActions } from '../sync/bridge-service.js';

export function createShellActions(window: () => BrowserWindow | null): ShellActions {
  return {
    async openFolder(folder) {
      const problem = await shell.openPath(folder);
      if (problem) throw new Error(problem);
    },
    async chooseFolder() {
      const owner = window();
      const options = { title: 'Choose the scan folder', properties: ['openDirectory', 'createDirectory'] as Array<'openDirectory' | 'createDirectory'> };
      const answer = owner ? await dialog.showOpenDialog(owner, options) : await dialog.showOpenDialog(options);
      return answer.canceled ? null : (answer.filePaths[0] ?? null);
    },
    async saveDocument({ url, fileName }) {
      const owner = window();
      const options = { title: 'Save the file', defaultPath: fileName };
      const answer = owner ? await dialog.showSaveDialog(owner, options) : await dialog.showSaveDialog(options);
      if (answer.canceled || !answer.filePath) return null;
      // Streamed to disk: scans can be several hundred megabytes.
      const response = await fetch(url);
      if (!response.ok || !response.body) throw new Error(`the server answered ${response.status}`);
      await pipeline(Readable.fromWeb(response.body as WebReadableStream<Uint8Array>), createWriteStream(answer.filePath));
      return answer.filePath;
    },
  };
}
