// The bridge contract (STYLE.md "One contract, two sides"): the Electron preload and the HTTP twin
// expose exactly BRIDGE_METHOD_NAMES, both unwrap envelopes the same way, and the main process
// refuses malformed payloads before the engine sees them.
import { readFileSync } from 'node:fs';
import vm from 'node:vm';
import ts from 'typescript';
import { describe, expect, it, vi } from 'vitest';
import { BRIDGE_METHOD_NAMES, type BridgeEnvelope, type BridgeEvent } from '../shared/bridge.js';
import { IPC_CALL_CHANNEL, IPC_EVENT_CHANNEL, PRELOAD_GLOBAL } from '../shared/bridge-http.js';
import { createBridgeCallHandler, createBridgeCallValidator, isRendererUrl } from '../electron/main/bridge-call.js';
import { createHttpBridgeClient } from '../renderer/src/bridge/http-client.js';
import { createPreloadBridgeClient } from '../renderer/src/bridge/preload-client.js';
import { BridgeError } from '../renderer/src/bridge/errors.js';
import type { PreloadBridge } from '../renderer/src/bridge/preload-api.js';

const PATIENT = '5f0e8a3c-1d2b-4c3d-8e9f-000000000001';
const DOCUMENT = '7a1c0000-0000-4000-8000-000000000001';

/** Runs the real preload source in a sandbox-like context with a fake `electron`, as Electron would. */
function loadPreload() {
  const source = readFileSync(new URL('../electron/preload/preload.cts', import.meta.url), 'utf8');
  const { outputText } = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } });
  const exposed: Record<string, unknown> = {};
  const invocations: unknown[][] = [];
  const ipcListeners = new Map<string, Set<(...args: unknown[]) => void>>();
  const ipcRenderer = {
    invoke: vi.fn(async (...args: unknown[]) => {
      invocations.push(args);
      return { ok: true, value: 'answer' };
    }),
    on: (channel: string, listener: (...args: unknown[]) => void) => ipcListeners.set(channel, (ipcListeners.get(channel) ?? new Set()).add(listener)),
    removeListener: (channel: string, listener: (...args: unknown[]) => void) => ipcListeners.get(channel)?.delete(listener),
  };
  const electron = { contextBridge: { exposeInMainWorld: (name: string, value: unknown) => (exposed[name] = value) }, ipcRenderer };
  const module = { exports: {} };
  const requireInSandbox = (name: string) => {
    if (name === 'electron') return electron;
    throw new Error(`a sandboxed preload cannot require ${name}`);
  };
  vm.runInNewContext(outputText, { require: requireInSandbox, module, exports: module.exports, console });
  return { exposed, invocations, ipcListeners };
}

describe('preload', () => {
  it('exposes exactly the bridge methods plus onEvent, under the shared global name, and never ipcRenderer', () => {
    const { exposed } = loadPreload();
    expect(Object.keys(exposed)).toEqual([PRELOAD_GLOBAL]);
    const api = exposed[PRELOAD_GLOBAL] as Record<string, unknown>;
    expect(Object.keys(api).sort()).toEqual([...BRIDGE_METHOD_NAMES, 'onEvent'].sort());
    expect(Object.values(api).every((value) => typeof value === 'function')).toBe(true);
    expect(JSON.stringify(Object.keys(api))).not.toContain('ipcRenderer');
    expect(Object.isFrozen(api)).toBe(true);
  });

  it('sends each call on the shared IPC channel as (method, argument list)', async () => {
    const { exposed, invocations } = loadPreload();
    const api = exposed[PRELOAD_GLOBAL] as PreloadBridge;
    await expect(api.searchDocuments(PATIENT, { path: '/', limit: 10 })).resolves.toEqual({ ok: true, value: 'answer' });
    expect(invocations).toEqual([[IPC_CALL_CHANNEL, 'searchDocuments', [PATIENT, { path: '/', limit: 10 }]]]);
  });

  it('delivers events without the IPC event object, and unsubscribes', () => {
    const { exposed, ipcListeners } = loadPreload();
    const api = exposed[PRELOAD_GLOBAL] as PreloadBridge;
    const received: unknown[][] = [];
    const unsubscribe = api.onEvent((...args: unknown[]) => received.push(args));
    const event: BridgeEvent = { type: 'documents-changed', patientId: PATIENT };
    for (const listener of ipcListeners.get(IPC_EVENT_CHANNEL)!) listener({ sender: 'secret ipc object' }, event);
    expect(received).toEqual([[event]]);
    unsubscribe();
    expect(ipcListeners.get(IPC_EVENT_CHANNEL)!.size).toBe(0);
  });
});

describe('renderer clients', () => {
  it('the HTTP twin and the preload client expose the same methods: BRIDGE_METHOD_NAMES plus onEvent', () => {
    const http = createHttpBridgeClient({ baseUrl: 'http://127.0.0.1:1', token: 't', fetch: vi.fn() });
    const preload = createPreloadBridgeClient({ onEvent: () => () => undefined } as unknown as PreloadBridge);
    const expected = [...BRIDGE_METHOD_NAMES, 'onEvent'].sort();
    expect(Object.keys(http).sort()).toEqual(expected);
    expect(Object.keys(preload).sort()).toEqual(expected);
  });

  it('HTTP: POST /bridge/call/<method> with the JSON argument list and the launch token; values unwrapped', async () => {
    const fetch = vi.fn(async () => new Response(JSON.stringify({ ok: true, value: { files: [], total: 0 } }), { status: 200 }));
    const client = createHttpBridgeClient({ baseUrl: 'http://127.0.0.1:4317', token: 'launch-token', fetch });
    await expect(client.listFiles({ pairId: 'p1', limit: 5 })).resolves.toEqual({ files: [], total: 0 });
    const [url, init] = fetch.mock.calls[0] as unknown as [string, RequestInit];
    expect(url).toBe('http://127.0.0.1:4317/bridge/call/listFiles');
    expect(init.method).toBe('POST');
    expect((init.headers as Record<string, string>).authorization).toBe('Bearer launch-token');
    expect(JSON.parse(init.body as string)).toEqual([{ pairId: 'p1', limit: 5 }]);
  });

  it('both clients turn an error envelope into a BridgeError with code, plain message and detail', async () => {
    const envelope: BridgeEnvelope<never> = { ok: false, error: { code: 'TOO_LARGE', message: 'The file is larger than the server accepts.', detail: 'limit 1 MB' } };
    const http = createHttpBridgeClient({ baseUrl: 'http://127.0.0.1:1', token: 't', fetch: async () => new Response(JSON.stringify(envelope)) });
    const preload = createPreloadBridgeClient({ getStatus: async () => envelope, onEvent: () => () => undefined } as unknown as PreloadBridge);
    for (const call of [() => http.getStatus(), () => preload.getStatus()]) {
      const error = await call().catch((failure: unknown) => failure);
      expect(error).toBeInstanceOf(BridgeError);
      expect(error).toMatchObject({ code: 'TOO_LARGE', message: 'The file is larger than the server accepts.', detail: 'limit 1 MB' });
    }
  });

  it('HTTP: a wrong launch token (401) and an unreachable twin become plain-language errors', async () => {
    const expired = createHttpBridgeClient({ baseUrl: 'http://127.0.0.1:1', token: 'old', fetch: async () => new Response('', { status: 401 }) });
    await expect(expired.getStatus()).rejects.toMatchObject({ code: 'UNAVAILABLE', message: expect.stringContaining('old link') });
    const down = createHttpBridgeClient({ baseUrl: 'http://127.0.0.1:1', token: 't', fetch: async () => Promise.reject(new TypeError('fetch failed')) });
    await expect(down.getStatus()).rejects.toMatchObject({ code: 'UNAVAILABLE', message: expect.stringContaining('not responding') });
  });

  it('HTTP: events arrive from one EventSource with the token in the query, closed after the last listener', () => {
    const sources: Array<{ url: string; listener?: (message: { data: string }) => void; closed: boolean }> = [];
    const client = createHttpBridgeClient({
      baseUrl: 'http://127.0.0.1:4317',
      token: 'launch-token',
      fetch: vi.fn(),
      createEventSource: (url) => {
        const source = { url, closed: false, listener: undefined as ((message: { data: string }) => void) | undefined };
        sources.push(source);
        return { addEventListener: (_type, listener) => (source.listener = listener), close: () => (source.closed = true) };
      },
    });
    const first: BridgeEvent[] = [];
    const second: BridgeEvent[] = [];
    const stopFirst = client.onEvent((event) => first.push(event));
    const stopSecond = client.onEvent((event) => second.push(event));
    expect(sources).toHaveLength(1);
    expect(sources[0]!.url).toBe('http://127.0.0.1:4317/bridge/events?token=launch-token');
    sources[0]!.listener!({ data: JSON.stringify({ type: 'documents-changed', patientId: null }) });
    sources[0]!.listener!({ data: 'not json' });
    expect(first).toEqual([{ type: 'documents-changed', patientId: null }]);
    expect(second).toEqual(first);
    stopFirst();
    expect(sources[0]!.closed).toBe(false);
    stopSecond();
    expect(sources[0]!.closed).toBe(true);
  });
});

describe('main process gate', () => {
  const validator = createBridgeCallValidator();
  const rendererUrl = 'file:///opt/Patient%20Docs/resources/app.asar/dist/renderer/index.html';

  it('accepts well-formed calls of every shape', () => {
    expect(validator.check('getStatus', [])).toMatchObject({ ok: true });
    expect(validator.check('addPair', [{ folder: '/scans', patientId: PATIENT, remoteBasePath: '/scans' }])).toMatchObject({ ok: true });
    expect(validator.check('searchDocuments', [PATIENT, { path: '/', offset: 0, limit: 1000, sortBy: 'fileName', sortDirection: 'ASC' }])).toMatchObject({ ok: true });
    expect(validator.check('saveDocument', [PATIENT, DOCUMENT])).toMatchObject({ ok: true });
    expect(validator.check('documentVersions', [PATIENT, DOCUMENT])).toMatchObject({ ok: true });
    expect(validator.check('saveDocumentVersion', [PATIENT, DOCUMENT, 2])).toMatchObject({ ok: true });
    expect(validator.check('retryFailed', [{ fileId: 3 }])).toMatchObject({ ok: true });
  });

  it.each([
    ['an unknown method', 'deleteEverything', []],
    ['a prototype key as method', '__proto__', []],
    ['a non-string method', 42, []],
    ['arguments that are not a list', 'getStatus', { 0: 1 }],
    ['too many arguments', 'getStatus', ['extra']],
    ['too few arguments', 'saveDocument', [PATIENT]],
    ['a patient id that is not a UUID', 'searchDocuments', ['../../etc/passwd', {}]],
    ['a page size over the limit', 'searchDocuments', [PATIENT, { limit: 100_000 }]],
    ['an unknown sort field', 'searchDocuments', [PATIENT, { sortBy: 'password' }]],
    ['more than 30 ids', 'searchDocuments', [PATIENT, { id: Array.from({ length: 31 }, () => DOCUMENT) }]],
    ['a missing required field', 'addPair', [{ patientId: PATIENT }]],
    ['a wrong type', 'fileHistory', ['1']],
    ['a negative file id', 'retryFailed', [{ fileId: -1 }]],
    ['a document id that is not a UUID', 'documentVersions', [PATIENT, '../versions']],
    ['version 0', 'saveDocumentVersion', [PATIENT, DOCUMENT, 0]],
    ['a version that is not a whole number', 'saveDocumentVersion', [PATIENT, DOCUMENT, 1.5]],
    ['a version over the largest the server counts', 'saveDocumentVersion', [PATIENT, DOCUMENT, 2 ** 31]],
    ['a concurrency out of range', 'updateSettings', [{ concurrency: 1000 }]],
    ['a port out of range', 'updateSettings', [{ webhook: { port: 70_000 } }]],
  ])('refuses %s with INVALID_INPUT and a detail', (_label, method, args) => {
    const checked = validator.check(method, args);
    expect(checked.ok).toBe(false);
    if (!checked.ok) {
      expect(checked.envelope.ok).toBe(false);
      expect(checked.envelope).toMatchObject({ error: { code: 'INVALID_INPUT', message: 'The request was not valid.' } });
      expect((checked.envelope as { error: { detail: string } }).error.detail.length).toBeGreaterThan(0);
    }
  });

  it('never calls the engine for a refused call or a foreign page, and passes valid calls through', async () => {
    const target = { call: vi.fn(async () => ({ ok: true as const, value: 'done' })) };
    const handle = createBridgeCallHandler({ target, isTrustedSender: isRendererUrl(rendererUrl) });
    await expect(handle(rendererUrl, 'fileHistory', ['x'])).resolves.toMatchObject({ ok: false, error: { code: 'INVALID_INPUT' } });
    await expect(handle('https://evil.example/index.html', 'getStatus', [])).resolves.toMatchObject({ ok: false, error: { code: 'UNAVAILABLE' } });
    await expect(handle('file:///tmp/other.html', 'getStatus', [])).resolves.toMatchObject({ ok: false });
    await expect(handle(undefined, 'getStatus', [])).resolves.toMatchObject({ ok: false });
    expect(target.call).not.toHaveBeenCalled();
    await expect(handle(`${rendererUrl}#/sync`, 'fileHistory', [7])).resolves.toEqual({ ok: true, value: 'done' });
    expect(target.call).toHaveBeenCalledWith('fileHistory', [7]);
  });

  it('answers an envelope even when the engine throws', async () => {
    const handle = createBridgeCallHandler({ target: { call: async () => Promise.reject(new Error('boom')) }, isTrustedSender: () => true });
    await expect(handle(rendererUrl, 'getStatus', [])).resolves.toMatchObject({ ok: false, error: { code: 'INTERNAL' } });
  });
});
