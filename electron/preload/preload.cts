/**
 * The only door between the renderer and the engine (STYLE.md "One contract, two sides").
 * Sandboxed preloads may require nothing but `electron`, so the method list is written out here and
 * checked against shared/bridge.ts by the compiler (both directions: no extra name, none missing)
 * and at run time by test/bridge-contract.test.ts. `ipcRenderer` itself is never exposed.
 */
// A CommonJS file under verbatimModuleSyntax imports this way; Electron loads preloads as CommonJS.
// eslint-disable-next-line @typescript-eslint/no-require-imports
import electron = require('electron');
import type { BridgeEvent, BridgeMethod } from '../../shared/bridge.js' with { 'resolution-mode': 'import' };
import type { IPC_CALL_CHANNEL as CallChannel, IPC_EVENT_CHANNEL as EventChannel, PRELOAD_GLOBAL as PreloadGlobal } from '../../shared/bridge-http.js' with { 'resolution-mode': 'import' };

const METHODS = [
  'getStatus',
  'setupEmbedded',
  'testConnection',
  'setupRemote',
  'listPairs',
  'addPair',
  'removePair',
  'pausePair',
  'resumePair',
  'retryFailed',
  'listFiles',
  'fileHistory',
  'historyFiles',
  'openFolder',
  'chooseFolder',
  'listPatients',
  'searchDocuments',
  'saveDocument',
  'documentVersions',
  'saveDocumentVersion',
  'webhookActivity',
  'listCases',
  'assignCase',
  'caseAssignments',
  'exportHistoryCsv',
  'getSettings',
  'updateSettings',
] as const satisfies readonly BridgeMethod[];

// Compile-time proof that METHODS names every bridge method.
type Missing = Exclude<BridgeMethod, (typeof METHODS)[number]>;
const everyMethodListed: [Missing] extends [never] ? true : Missing = true;
void everyMethodListed;

const CALL_CHANNEL: typeof CallChannel = 'patient-docs:bridge-call';
const EVENT_CHANNEL: typeof EventChannel = 'patient-docs:bridge-event';
const GLOBAL_NAME: typeof PreloadGlobal = 'patientDocs';

const { contextBridge, ipcRenderer } = electron;

const api: Record<string, unknown> = {};
for (const method of METHODS) {
  // Arguments are passed as one list; main validates it against BRIDGE_METHODS before use.
  api[method] = (...args: unknown[]) => ipcRenderer.invoke(CALL_CHANNEL, method, args);
}
api.onEvent = (listener: (event: BridgeEvent) => void): (() => void) => {
  if (typeof listener !== 'function') throw new TypeError('onEvent needs a function');
  // Only the event reaches the page, never the IpcRendererEvent (it carries the sender).
  const forward = (_event: electron.IpcRendererEvent, payload: BridgeEvent) => listener(payload);
  ipcRenderer.on(EVENT_CHANNEL, forward);
  return () => {
    ipcRenderer.removeListener(EVENT_CHANNEL, forward);
  };
};

contextBridge.exposeInMainWorld(GLOBAL_NAME, Object.freeze(api));
