/** The desktop-only abilities the engine asks of its shell: dialogs, the file manager, saving a download. */
import { dialog, shell, type BrowserWindow } from 'electron';
import type { ShellActions } from '../sync/app/bridge-service.js';

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
    async chooseSaveFile(fileName) {
      const owner = window();
      const options = { title: 'Save the file', defaultPath: fileName };
      const answer = owner ? await dialog.showSaveDialog(owner, options) : await dialog.showSaveDialog(options);
      return answer.canceled || !answer.filePath ? null : answer.filePath;
    },
  };
}
