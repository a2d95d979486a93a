/**
 * An in-memory engine for `?demo`: a development aid to lay out screens without a server.
 * It follows the server's search rules (DESIGN §3) so paging and the tree behave as in production.
 * The end-to-end tests never use it; they drive the real headless app.
 */
import { nameMatchesQuery } from '../../../shared/name-search.js';
import { matchesPatientFilter } from '../../../shared/patient-identifiers.js';
import type {
  AppStatus,
  BridgeClient,
  BridgeEvent,
  CaseView,
  ConnectionTestResult,
  FileState,
  FileView,
  PairView,
  SettingsView,
  StateCounts,
  WebhookActivityView,
} from '../../../shared/bridge.js';
import { FILE_STATES } from '../../../shared/bridge.js';
import { PLAIN_MESSAGES } from '../../../shared/bridge-errors.js';
import type { DocumentDto, DocumentVersionDto, PatientDto, SearchBody, SortField } from '../../../shared/schemas.js';
import type { DocumentQuery } from '../documents/walk.js';
import { scanDateOf } from '../documents/scan-date.js';
import { BridgeError } from './errors.js';
import { makeDemoInbox } from './demo-cases.js';

export interface DemoOptions {
  documents: number;
  /** 'first-run' starts unconfigured. */
  state: string;
}

const ORGANIZATION_ID = '0b7c6a52-6a0e-4c5f-9a53-2f1d1c1e0a01';
const NOW = Date.parse('2026-03-12T10:30:00.000Z');
const PATIENT_NAMES = ['Jane Roe', 'John Doe', 'Maria García', 'Ahmed Khan', 'Yuki Tanaka', 'Olivia Brown', 'Lukas Schmidt'];
const FOLDERS = ['/scans/2026-03-04 Upper arch', '/scans/2026-03-04 Lower arch', '/scans/2026-02-11 Bite registration', '/reports', '/photos/intraoral', '/xray/2026-01-20 CBCT series'];
const TYPES_BY_FOLDER: Record<string, string[]> = {
  '/scans/2026-03-04 Upper arch': ['STL', 'PLY'],
  '/scans/2026-03-04 Lower arch': ['STL', 'OBJ'],
  '/scans/2026-02-11 Bite registration': ['STL'],
  '/reports': ['PDF'],
  '/photos/intraoral': ['JPG', 'PNG'],
  '/xray/2026-01-20 CBCT series': ['DCM'],
};

function uuid(index: number, prefix = '7a1c'): string {
  return `${prefix}0000-0000-4000-8000-${index.toString(16).padStart(12, '0')}`;
}

function emptyCounts(): StateCounts {
  return Object.fromEntries(FILE_STATES.map((state) => [state, 0])) as StateCounts;
}

function makePatients(): PatientDto[] {
  // Most demo patients carry a chart number and a birth date, as a clinic's would; the last has
  // neither, and the list tells it apart by its id's short form.
  return PATIENT_NAMES.map((name, index) => ({
    id: uuid(index + 1, '5f0e'),
    name,
    identifiers: index === PATIENT_NAMES.length - 1 ? [] : [{ system: 'chart', value: String(10231 + index * 17) }],
    birthDate: index === PATIENT_NAMES.length - 1 ? null : `19${String(62 + index * 5).padStart(2, '0')}-0${(index % 9) + 1}-1${index}`,
    createdAt: new Date(NOW - index * 86_400_000).toISOString(),
    updatedAt: new Date(NOW).toISOString(),
  }));
}

/**
 * The one demo document whose stored file IT marked lost on the server (`verify --mark-lost`): its
 * current version 2 is lost, version 1 still downloads ("Bite registration 0001.stl").
 */
const LOST_INDEX = 2;
// An hour after its version 2 was uploaded (NOW - LOST_INDEX hours, see lastModifiedAt).
const LOST_AT = new Date(NOW - 3_600_000).toISOString();

function makeDocuments(count: number, modelUrl: string): DocumentDto[] {
  const documents: DocumentDto[] = [];
  for (let index = 0; index < count; index += 1) {
    const folder = FOLDERS[index % FOLDERS.length]!;
    const types = TYPES_BY_FOLDER[folder]!;
    const fileType = types[index % types.length]!;
    const hasContent = index % 17 !== 5;
    const fileName = `${folder.split('/').pop()!.replace(/^\d{4}-\d\d-\d\d /, '')} ${String(Math.floor(index / FOLDERS.length) + 1).padStart(4, '0')}.${fileType.toLowerCase()}`;
    const isModel = fileType === 'STL' || fileType === 'PLY' || fileType === 'OBJ';
    documents.push({
      id: uuid(index + 1),
      storageUrl: 'http://127.0.0.1:8080/storage/demo',
      fileName,
      fileType,
      path: folder,
      lastModifiedAt: new Date(NOW - index * 3_600_000).toISOString(),
      createdAt: new Date(NOW - index * 3_600_000).toISOString(),
      // Scanned 25 minutes before the upload; every seventh file from a workstation that did not say.
      scannedAt: index % 7 === 3 ? null : new Date(NOW - index * 3_600_000 - 25 * 60_000).toISOString(),
      hasContent,
      fileSize: hasContent ? 40_000 + ((index * 7919) % 48_000_000) : null,
      sha256: hasContent ? index.toString(16).padStart(64, 'a') : null,
      version: hasContent ? 1 : 0,
      storageDownloadUri: hasContent ? (isModel ? modelUrl : `data:text/plain,demo%20file%20${index}`) : null,
      thumbnailDownloadUri: hasContent && (isModel || fileType === 'PDF') ? demoThumbnail(fileType, index) : null,
    });
  }
  const lost = documents[LOST_INDEX];
  // As the server shows a document whose current stored file was marked lost: no content, no size or links, its version kept.
  if (lost) Object.assign(lost, { hasContent: false, fileSize: null, sha256: null, version: 2, storageDownloadUri: null, thumbnailDownloadUri: null });
  return documents;
}

/** Every version of a demo document, newest first, as the server lists them. */
function makeVersions(document: DocumentDto, index: number, modelUrl: string): DocumentVersionDto[] {
  const common = { fileType: document.fileType, originalFileName: document.fileName, uploadedBy: 'scanner-pc-1' };
  if (index === LOST_INDEX) {
    const earlier = (days: number) => new Date(Date.parse(document.lastModifiedAt) - days * 86_400_000).toISOString();
    return [
      // A lost current version is not served: the server calls none current, and gives it no link.
      { ...common, version: 2, current: false, fileSize: 9_412_084, sha256: '2b'.repeat(32), uploadedAt: document.lastModifiedAt, thumbnailStatus: 'none', storageDownloadUri: null, contentLostAt: LOST_AT, scannedAt: document.scannedAt },
      { ...common, version: 1, current: false, fileSize: 9_380_512, sha256: '1a'.repeat(32), uploadedAt: earlier(7), thumbnailStatus: 'ready', storageDownloadUri: modelUrl, contentLostAt: null, scannedAt: null },
    ];
  }
  if (!document.hasContent) return [];
  return [
    {
      ...common,
      version: document.version,
      current: true,
      fileSize: document.fileSize ?? 0,
      sha256: document.sha256 ?? '',
      uploadedAt: document.lastModifiedAt,
      thumbnailStatus: document.thumbnailDownloadUri ? 'ready' : 'none',
      storageDownloadUri: document.storageDownloadUri,
      contentLostAt: null,
      scannedAt: document.scannedAt,
    },
  ];
}

function demoThumbnail(fileType: string, index: number): string {
  const hue = fileType === 'PDF' ? 210 : 180 + (index % 5) * 6;
  const shape =
    fileType === 'PDF'
      ? `<rect x="18" y="10" width="28" height="44" rx="3" fill="#fff" stroke="hsl(${hue},30%,60%)"/><path d="M24 22h16M24 28h16M24 34h10" stroke="hsl(${hue},30%,70%)" stroke-width="2"/>`
      : `<path d="M12 40c0-16 9-26 20-26s20 10 20 26" fill="none" stroke="hsl(${hue},35%,55%)" stroke-width="7" stroke-linecap="round"/>`;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64"><rect width="64" height="64" fill="hsl(${hue},30%,95%)"/>${shape}</svg>`;
  return `data:image/svg+xml,${encodeURIComponent(svg)}`;
}

/** A small binary STL (a ring of boxes) so the 3D viewer has something to show. */
function makeDemoStl(): string {
  const triangles: number[][] = [];
  const box = (cx: number, cy: number, size: number, height: number): void => {
    const x0 = cx - size, x1 = cx + size, y0 = cy - size, y1 = cy + size;
    const corners = [[x0, y0, 0], [x1, y0, 0], [x1, y1, 0], [x0, y1, 0], [x0, y0, height], [x1, y0, height], [x1, y1, height], [x0, y1, height]] as const;
    const faces = [[0, 2, 1], [0, 3, 2], [4, 5, 6], [4, 6, 7], [0, 1, 5], [0, 5, 4], [1, 2, 6], [1, 6, 5], [2, 3, 7], [2, 7, 6], [3, 0, 4], [3, 4, 7]];
    for (const face of faces) triangles.push(face.flatMap((corner) => [...corners[corner]!]));
  };
  for (let tooth = 0; tooth < 14; tooth += 1) {
    const angle = Math.PI * (0.08 + (0.84 * tooth) / 13);
    box(Math.cos(angle) * 25, Math.sin(angle) * 30, 3.2, 7 + (tooth % 3));
  }
  const buffer = new ArrayBuffer(84 + triangles.length * 50);
  const view = new DataView(buffer);
  view.setUint32(80, triangles.length, true);
  triangles.forEach((vertices, index) => {
    const base = 84 + index * 50 + 12;
    vertices.forEach((value, offset) => view.setFloat32(base + offset * 4, value, true));
  });
  return URL.createObjectURL(new Blob([buffer], { type: 'model/stl' }));
}

function compareDocuments(sortBy: SortField): (a: DocumentDto, b: DocumentDto) => number {
  const key = (document: DocumentDto): string | number => {
    switch (sortBy) {
      case 'fileName':
        return document.fileName.toLowerCase();
      case 'fileSize':
        return document.fileSize ?? -1;
      case 'fileType':
        return document.fileType;
      case 'path':
        return document.path;
      case 'lastModifiedAt':
        return document.lastModifiedAt;
      case 'scannedAt':
        return scanDateOf(document).at;
    }
  };
  return (a, b) => {
    const left = key(a), right = key(b);
    if (left < right) return -1;
    if (left > right) return 1;
    return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  };
}

function search(all: DocumentDto[], body: DocumentQuery): DocumentDto[] {
  if (body.id && body.id.length > 0) return all.filter((document) => body.id!.includes(document.id));
  const folder = body.path && body.path !== '/' ? body.path : null;
  const name = body.fileName?.toLowerCase();
  return all.filter(
    (document) =>
      (!folder || document.path === folder || document.path.startsWith(`${folder}/`)) &&
      (!name || document.fileName.toLowerCase().includes(name)) &&
      (!body.fileType || document.fileType === body.fileType) &&
      (body.hasContent !== true || document.hasContent) &&
      (!body.scannedFrom || scanDateOf(document).at >= body.scannedFrom) &&
      (!body.scannedTo || scanDateOf(document).at < body.scannedTo),
  );
}

interface DemoFile extends FileView {
  caseName: string;
}

function makeFiles(pairId: string, names: Array<[string, string, number, FileState]>): DemoFile[] {
  return names.map(([caseName, fileName, size, state], index) => ({
    id: index + 1 + (pairId === 'pair-2' ? 100 : 0),
    pairId,
    caseName,
    relativePath: caseName ? `${caseName}/${fileName}` : fileName,
    remotePath: `/scans${caseName ? `/${caseName}` : ''}`,
    fileName,
    size,
    state,
    bytesDone: state === 'synced' || state === 'verifying' ? size : state === 'uploading' ? Math.round(size * 0.35) : 0,
    rate: state === 'uploading' ? 6_400_000 : 0,
    attempts: state === 'failed' ? 1 : 0,
    nextAttemptAt: null,
    error: state === 'failed' ? { code: 'TOO_LARGE', message: PLAIN_MESSAGES.TOO_LARGE, detail: 'The upload is 612 MB; this server accepts at most 500 MB (PATIENT_DOCS_MAX_UPLOAD_BYTES).' } : null,
    documentId: state === 'synced' ? uuid(index + 1) : null,
    version: state === 'synced' ? 1 : null,
    updatedAt: NOW - index * 60_000,
    syncedAt: state === 'synced' ? NOW - index * 60_000 : null,
    lostAt: null,
  }));
}

export function createDemoBridge(options: DemoOptions): BridgeClient {
  const listeners = new Set<(event: BridgeEvent) => void>();
  const emit = (event: BridgeEvent): void => listeners.forEach((listener) => listener(event));
  const patients = makePatients();
  const modelUrl = makeDemoStl();
  const documents = makeDocuments(options.documents, modelUrl);
  let configured = options.state !== 'first-run';
  let settings: SettingsView = {
    concurrency: 4,
    settleMs: 2000,
    rescanMinutes: 10,
    recheckMinutes: 240,
    ignorePatterns: ['*.bak', 'export-log.txt'],
    bandwidthLimitBytesPerSecond: 0,
    webhook: { port: 8787, publicUrl: 'https://smile-clinic.example-tunnel.net/hooks' },
    maskedSecret: '••••••••••••6789',
  };
  const files: Record<string, DemoFile[]> = {
    'pair-1': makeFiles('pair-1', [
      ['2026-03-12 Upper arch', 'upper-arch.stl', 48_200_000, 'uploading'],
      ['2026-03-12 Upper arch', 'upper-arch-prep.stl', 51_900_000, 'queued'],
      ['2026-03-12 Upper arch', 'bite.ply', 9_800_000, 'verifying'],
      ['2026-03-12 Upper arch', 'order-form.pdf', 412_000, 'synced'],
      ['2026-03-04 Lower arch', 'lower-arch.stl', 44_100_000, 'synced'],
      ['2026-03-04 Lower arch', 'lower-arch-full-res.stl', 612_000_000, 'failed'],
      ['2026-03-04 Lower arch', 'report.pdf', 230_000, 'synced'],
    ]),
    'pair-2': makeFiles('pair-2', [
      ['', 'panoramic-2026-03-10.dcm', 18_400_000, 'synced'],
      ['', 'cephalometric.dcm', 16_900_000, 'synced'],
    ]),
  };
  const pairMeta: Record<string, { folder: string; patientIndex: number; paused: boolean }> = {
    'pair-1': { folder: 'C:\\Scans\\iTero Export', patientIndex: 0, paused: false },
    'pair-2': { folder: 'D:\\Xray\\Panoramic', patientIndex: 1, paused: false },
  };
  const activity: WebhookActivityView[] = [
    { id: 4, receivedAt: NOW - 40_000, verdict: 'accepted', messageId: 'c1f3b2a0-5b7e-4f7c-9a51-0d3e3f2a9b11', eventType: 'document.uploaded', patientId: patients[0]!.id, reason: null },
    { id: 3, receivedAt: NOW - 95_000, verdict: 'duplicate', messageId: 'c1f3b2a0-5b7e-4f7c-9a51-0d3e3f2a9b10', eventType: 'document.created', patientId: patients[0]!.id, reason: 'Already received; ignored.' },
    { id: 2, receivedAt: NOW - 300_000, verdict: 'rejected', messageId: null, eventType: null, patientId: null, reason: 'Signature does not match the body.' },
    { id: 1, receivedAt: NOW - 3_600_000, verdict: 'accepted', messageId: '0e8a7a34-1f60-4b4e-8f3c-5ad1c6a4a001', eventType: 'patient.updated', patientId: patients[1]!.id, reason: null },
  ];

  const status = (): AppStatus => ({
    mode: configured ? 'embedded' : 'unconfigured',
    shell: 'headless',
    server: configured ? { url: 'http://127.0.0.1:8080', tokenUrl: 'http://127.0.0.1:8080/oauth2/token', clientId: 'scanner-pc-1', organizationId: ORGANIZATION_ID, organizationName: 'Smile Clinic', trustedCertificates: [] } : null,
    online: true,
    secrets: { backend: 'keychain', warning: null, clientSecretMissing: false },
    notices: [],
    webhook: { listening: configured, localUrl: 'http://127.0.0.1:8787/webhook', publicUrl: settings.webhook.publicUrl, subscribed: configured, error: null },
    version: '0.1.0-demo',
  });

  const pairView = (pairId: string): PairView => {
    const meta = pairMeta[pairId]!;
    const pairFiles = files[pairId] ?? [];
    const counts = emptyCounts();
    const cases = new Map<string, CaseView>();
    for (const file of pairFiles) {
      counts[file.state] += 1;
      const entry = cases.get(file.caseName) ?? { path: file.caseName || '/', counts: emptyCounts(), bytesDone: 0, bytesTotal: 0, items: { done: 0, total: 0 }, skipped: 0 };
      entry.counts[file.state] += 1;
      entry.items.total += 1;
      if (file.state === 'synced') entry.items.done += 1;
      entry.bytesDone += file.bytesDone;
      entry.bytesTotal += file.size;
      cases.set(file.caseName, entry);
    }
    const bytesTotal = pairFiles.reduce((sum, file) => sum + file.size, 0);
    const bytesDone = pairFiles.reduce((sum, file) => sum + file.bytesDone, 0);
    const rate = meta.paused ? 0 : pairFiles.reduce((sum, file) => sum + file.rate, 0);
    const failed = pairFiles.find((file) => file.state === 'failed');
    const busy = counts.queued + counts.creating + counts.uploading + counts.verifying + counts.waiting > 0;
    return {
      id: pairId,
      folder: meta.folder,
      patientId: patients[meta.patientIndex]!.id,
      patientName: patients[meta.patientIndex]!.name,
      remoteBasePath: '/scans',
      paused: meta.paused,
      state: meta.paused ? 'paused' : failed ? 'attention' : busy ? 'syncing' : 'idle',
      counts,
      bytesDone,
      bytesTotal,
      rateBytesPerSecond: rate,
      etaSeconds: rate > 0 ? Math.round((bytesTotal - bytesDone - (failed?.size ?? 0)) / rate) : null,
      cases: [...cases.values()],
      items: { done: counts.synced, total: pairFiles.length },
      skipped: 0,
      lastError: failed?.error ?? null,
      failureReasons: failed?.error ? [{ ...failed.error, count: counts.failed, fileNames: [failed.relativePath] }] : [],
      retryReason: pairFiles.find((file) => file.state === 'waiting')?.error ?? null,
      folderError: null,
      settling: 0,
      unreadable: [],
      heldForDiskFull: 0,
    };
  };
  const pairs = (): PairView[] => Object.keys(pairMeta).map(pairView);

  // Progress: move uploads forward so the bars and speeds are alive while laying out.
  setInterval(() => {
    let changed = false;
    for (const [pairId, pairFiles] of Object.entries(files)) {
      if (pairMeta[pairId]?.paused) continue;
      for (const file of pairFiles) {
        if (file.state === 'uploading') {
          file.bytesDone = Math.min(file.size, file.bytesDone + file.rate / 2);
          if (file.bytesDone >= file.size) Object.assign(file, { state: 'verifying', rate: 0 });
          changed = true;
        } else if (file.state === 'verifying' && Math.random() < 0.3) {
          Object.assign(file, { state: 'synced', syncedAt: Date.now(), version: 1 });
          changed = true;
        } else if (file.state === 'queued' && !pairFiles.some((other) => other.state === 'uploading')) {
          Object.assign(file, { state: 'uploading', rate: 6_400_000 });
          changed = true;
        }
      }
      if (changed) emit({ type: 'files', pairId, files: pairFiles });
    }
    if (changed) emit({ type: 'pairs', pairs: pairs() });
  }, 500);

  const wait = <T>(value: T, milliseconds = 60): Promise<T> => new Promise((resolve) => setTimeout(() => resolve(value), milliseconds));

  const inbox = makeDemoInbox(patients, NOW);
  const client: BridgeClient = {
    ...inbox,
    getStatus: () => wait(status()),
    setupEmbedded: async () => {
      configured = true;
      emit({ type: 'status', status: status() });
      return wait(status(), 600);
    },
    testConnection: async (input): Promise<ConnectionTestResult> => {
      await wait(null, 500);
      if (!/^https?:\/\/.+/.test(input.serverUrl)) return { ok: false, step: 'reach', error: { code: 'UNREACHABLE', message: PLAIN_MESSAGES.UNREACHABLE, detail: `connect ECONNREFUSED ${input.serverUrl}` }, organizationName: null };
      if (input.clientSecret !== 'demo-secret') return { ok: false, step: 'authenticate', error: { code: 'BAD_CREDENTIALS', message: PLAIN_MESSAGES.BAD_CREDENTIALS, detail: 'invalid_client: client authentication failed' }, organizationName: null };
      return { ok: true, step: null, error: null, organizationName: 'Smile Clinic' };
    },
    setupRemote: async () => {
      configured = true;
      return wait(status());
    },
    listPairs: () => wait(pairs()),
    addPair: async (input) => {
      const pairId = `pair-${Object.keys(pairMeta).length + 1}`;
      const patientIndex = Math.max(0, patients.findIndex((patient) => patient.id === input.patientId));
      pairMeta[pairId] = { folder: input.folder, patientIndex, paused: false };
      files[pairId] = [];
      emit({ type: 'pairs', pairs: pairs() });
      return wait(pairView(pairId));
    },
    removePair: async (pairId) => {
      delete pairMeta[pairId];
      emit({ type: 'pairs', pairs: pairs() });
    },
    pausePair: async (pairId) => {
      pairMeta[pairId]!.paused = true;
      emit({ type: 'pairs', pairs: pairs() });
      return pairView(pairId);
    },
    resumePair: async (pairId) => {
      pairMeta[pairId]!.paused = false;
      emit({ type: 'pairs', pairs: pairs() });
      return pairView(pairId);
    },
    retryFailed: async (target) => {
      let count = 0;
      for (const pairFiles of Object.values(files)) {
        for (const file of pairFiles) {
          if (file.state !== 'failed') continue;
          if (target.fileId !== undefined && file.id !== target.fileId) continue;
          if (target.pairId !== undefined && file.pairId !== target.pairId) continue;
          Object.assign(file, { state: 'queued', error: null, attempts: file.attempts + 1 });
          count += 1;
        }
      }
      emit({ type: 'pairs', pairs: pairs() });
      return count;
    },
    listFiles: async (input) => {
      const states = input.states as FileState[] | undefined;
      const pairFiles = (files[input.pairId] ?? []).filter((file) => !states || states.includes(file.state));
      const offset = input.offset ?? 0;
      return wait({ files: pairFiles.slice(offset, offset + (input.limit ?? 200)), total: pairFiles.length });
    },
    fileHistory: async (fileId) => wait([{ fileId, at: NOW - 120_000, event: 'synced', version: 1, sha256: 'ab'.repeat(32), detail: 'Verified: 48.2 MB on the server' }]),
    openFolder: async (pairId) => pairMeta[pairId]?.folder ?? '',
    chooseFolder: async () => null,
    listPatients: async (query) => {
      const matching = patients.filter((patient) => matchesPatientFilter(patient, query, nameMatchesQuery));
      return wait({ patients: matching, offset: 0, limit: query.limit ?? 50, total: matching.length });
    },
    searchDocuments: async (patientId, wireBody) => {
      const body = wireBody as DocumentQuery & Pick<SearchBody, 'offset' | 'limit'>;
      const all = patientId === patients[0]!.id ? documents : [];
      const matching = search(all, body).sort(compareDocuments(body.sortBy ?? 'lastModifiedAt'));
      if ((body.sortDirection ?? 'DESC') === 'DESC') matching.reverse();
      const offset = body.offset ?? 0;
      const limit = body.limit ?? 50;
      return wait({ documents: matching.slice(offset, offset + limit), offset, limit, total: matching.length }, 15);
    },
    saveDocument: async () => null,
    saveDocumentVersion: async () => null,
    documentVersions: async (_patientId, documentId) => {
      const index = documents.findIndex((candidate) => candidate.id === documentId);
      return wait(index < 0 ? [] : makeVersions(documents[index]!, index, modelUrl));
    },
    webhookActivity: async (limit) => wait(activity.slice(0, limit)),
    historyFiles: async (limit) =>
      wait(
        Object.values(files)
          .flat()
          .map((file) => ({ ...file, folder: pairMeta[file.pairId]?.folder ?? 'a folder no longer synced', patientName: patients[pairMeta[file.pairId]?.patientIndex ?? 0]!.name, pairRemoved: false }))
          .slice(0, limit),
      ),
    exportHistoryCsv: async () =>
      'time,folder,patient,file,server path,event,version,sha256,detail,found missing on the server at\r\n' +
      `2026-03-12T10:28:00.000Z,C:\\Scans\\iTero Export,Jane Roe,upper-arch.stl,/scans/upper-arch.stl,verified,1,${'ab'.repeat(32)},,\r\n`,
    getSettings: async () => wait(settings),
    updateSettings: async (patch) => {
      if (patch.webhook?.port !== undefined && patch.webhook.port < 1024 && patch.webhook.port !== 0) throw new BridgeError('INVALID_INPUT', 'Choose a port above 1024.');
      const { clientSecret, webhook, ...rest } = patch;
      settings = { ...settings, ...rest, webhook: { ...settings.webhook, ...webhook }, maskedSecret: clientSecret ? `••••••••••••${clientSecret.slice(-4)}` : settings.maskedSecret };
      return wait(settings);
    },
    onEvent: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
  return client;
}
