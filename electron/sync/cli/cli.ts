#!/usr/bin/env node
/**
 * `patient-docs-sync` (DESIGN §4): what IT scripts on workstations without a display. The same
 * state as the desktop app (PATIENT_DOCS_SYNC_HOME).
 *   connect --server URL [--token-url URL] --client-id ID --organization UUID [--ca-file FILE | --forget-ca]   (secret: stdin or PATIENT_DOCS_CLIENT_SECRET)
 *   add-pair --folder DIR --patient UUID [--path /remote/base] [--name "Jane Roe"]
 *   add-inbox --folder DIR [--path /scans] [--rule PATTERN]...
 *   cases [--folder DIR] [--json]
 *   assign --folder DIR --case NAME --patient UUID
 *   config [--concurrency N] [--settle-ms N] [--rescan-minutes N] [--recheck-minutes N] [--bandwidth BYTES_PER_S] [--ignore PATTERN]...
 *   run [--once] [--timeout SECONDS]
 *   status [--json]
 *   retry
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { FileView, PairView } from '../../../shared/bridge.js';
import { isBridgeErrorCode, PLAIN_MESSAGES } from '../../../shared/bridge-errors.js';
import { canRetry, failureHint } from '../../../shared/failure-hints.js';
import { RECHECK_MINUTES } from '../../../shared/recheck-interval.js';
import { toCodedError } from '../app/bridge-error.js';
import { isDiskFull } from '../home/disk-full.js';
import { defaultSyncHome } from '../home/home-path.js';
import { ProgressTracker } from '../upload/progress.js';
import type { SyncApp } from '../app/sync-app.js';
import type { CaseView } from '../inbox/inbox-manager.js';
import type { SyncHome } from '../home/sync-home.js';
import { APP_VERSION } from '../home/app-version.js';

const USAGE = `usage: patient-docs-sync <command> [options]
  connect  --server URL [--token-url URL] --client-id ID --organization UUID [--ca-file FILE | --forget-ca]
           (the client secret is read from stdin or PATIENT_DOCS_CLIENT_SECRET, never from an argument;
           --ca-file: the clinic's CA certificate (PEM or DER) when the server's certificate is not
           from a public CA; it is kept in the sync home and trusted for this server from then on)
  add-pair --folder DIR --patient UUID [--path /remote/base] [--name NAME]
  add-inbox --folder DIR [--path /scans] [--rule PATTERN ...]
           a scanner inbox: one folder of many patients' cases (each top-level folder or loose file
           is a case), each synced to <path>/<case> of its patient once it has one; --rule reads a
           case's name, e.g. '{chart}_*' (parts: {chart} {id} {last} {first} {name} {birth}, and *)
  cases    [--folder DIR] [--json]        the inbox's cases: needs-patient, conflict, assigned or synced,
                                          with the evidence and the suggested patients
  assign   --folder DIR --case NAME --patient UUID   confirms a case's patient (refused once an upload of it began)
  config   [--concurrency N] [--settle-ms MS] [--rescan-minutes N] [--recheck-minutes N] [--bandwidth BYTES_PER_SECOND] [--ignore PATTERN ...]
           (--recheck-minutes: how often synced files are checked on the server, 15 to 10080, or 0 for never; default 240)
           (a \`run\` or the app already running takes up config and add-pair within seconds, no restart needed)
  run      [--once] [--timeout SECONDS]   watch and sync; --once: sync what is there, exit 0 when all verified,
                                          3 when inbox cases still need a patient
  status   [--json]                       pairs and per-file states
  retry                                   failed and waiting files are tried again now (by a running run, else the next run)
State lives in PATIENT_DOCS_SYNC_HOME (now: ${defaultSyncHome()}).`;

class UsageError extends Error {}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'connect':
      return connect(rest);
    case 'add-pair':
      return addPair(rest);
    case 'add-inbox':
      return addInbox(rest);
    case 'cases':
      return cases(rest);
    case 'assign':
      return assign(rest);
    case 'config':
      return config(rest);
    case 'run':
      return run(rest);
    case 'status':
      return status(rest);
    case 'retry':
      return retry(rest);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      console.log(USAGE);
      return command === undefined ? 64 : 0;
    default:
      throw new UsageError(`unknown command '${command}'`);
  }
}

/** The sync home, saying so when its secrets are not in the keychain. */
async function openHome(): Promise<SyncHome> {
  // Loaded by the commands, not with the usage: the settings store (conf) and the secret store.
  const { openSyncHome } = await import('../home/sync-home.js');
  const home = await openSyncHome(defaultSyncHome());
  if (home.secrets.warning) console.error(`warning: ${home.secrets.warning}`);
  return home;
}

async function openApp(options: { webhooks: boolean }): Promise<SyncApp> {
  const home = await openHome();
  const env = process.env;
  const backoffBase = Number(env.PATIENT_DOCS_SYNC_BACKOFF_BASE_MS ?? '');
  const threshold = Number(env.PATIENT_DOCS_SYNC_RESUMABLE_THRESHOLD ?? '');
  // How often synced files are checked against the server again (default 4 hours; tests and drills shorten it).
  const recheckMs = env.PATIENT_DOCS_SYNC_RECHECK_MS === undefined ? NaN : Number(env.PATIENT_DOCS_SYNC_RECHECK_MS);
  const engine = {
    ...(Number.isFinite(backoffBase) && backoffBase > 0 ? { backoff: { baseMs: backoffBase, maxMs: Math.max(backoffBase * 16, 2000) } } : {}),
    ...(Number.isFinite(recheckMs) && recheckMs >= 0 ? { recheckMs } : {}),
  };
  // Loaded here, not at the top: the engine, the watcher and the HTTP client are not needed to print
  // the usage or the status, which IT's scripts and monitoring call often.
  const { SyncApp } = await import('../app/sync-app.js');
  const app = new SyncApp({
    home: home.directory,
    settings: home.settings,
    secrets: home.secrets,
    notices: home.notices,
    shell: 'headless',
    version: APP_VERSION,
    webhooks: options.webhooks,
    ...(Number.isFinite(threshold) && threshold > 0 ? { resumableThreshold: threshold } : {}),
    engine,
  });
  for (const notice of app.notices) console.error(`repaired: ${notice}`);
  return app;
}

async function connect(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      server: { type: 'string' },
      'token-url': { type: 'string' },
      'client-id': { type: 'string' },
      organization: { type: 'string' },
      'ca-file': { type: 'string' },
      'forget-ca': { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (!values.server || !values['client-id'] || !values.organization) throw new UsageError('connect needs --server, --client-id and --organization');
  if (values['ca-file'] !== undefined && values['forget-ca']) throw new UsageError('give either --ca-file or --forget-ca, not both');
  let caCertificate: string | undefined = values['forget-ca'] ? '' : undefined;
  if (values['ca-file'] !== undefined) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(values['ca-file']);
    } catch (error) {
      throw new UsageError(`--ca-file ${values['ca-file']} cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
    }
    // PEM as it is; a binary DER .cer as base64 (what the bridge carries).
    caCertificate = bytes.includes('-----BEGIN') ? bytes.toString('utf8') : bytes.toString('base64');
  }
  const clientSecret = process.env.PATIENT_DOCS_CLIENT_SECRET ?? readSecretFromStdin();
  if (!clientSecret) throw new UsageError('the client secret is read from stdin or PATIENT_DOCS_CLIENT_SECRET; neither had one');
  const app = await openApp({ webhooks: false });
  try {
    await app.setupRemote({
      serverUrl: values.server,
      clientId: values['client-id'],
      clientSecret,
      organizationId: values.organization,
      ...(values['token-url'] ? { tokenUrl: values['token-url'] } : {}),
      ...(caCertificate !== undefined ? { caCertificate } : {}),
    });
    console.log(`connected to ${values.server} as ${values['client-id']}; the secret is in the ${app.secrets.backend}`);
    const trusted = (await app.status()).server?.trustedCertificates ?? [];
    for (const certificate of trusted) console.log(`trusting the CA certificate '${certificate.subject}' for this server (SHA-256 ${certificate.fingerprint}, valid until ${certificate.validTo})`);
    return 0;
  } finally {
    await app.stop();
  }
}

async function addPair(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { folder: { type: 'string' }, patient: { type: 'string' }, path: { type: 'string' }, name: { type: 'string' } }, strict: true });
  if (!values.folder || !values.patient) throw new UsageError('add-pair needs --folder and --patient');
  const app = await openApp({ webhooks: false });
  try {
    const pair = await app.addPair({
      folder: values.folder,
      patientId: values.patient,
      ...(values.path ? { remoteBasePath: values.path } : {}),
      ...(values.name ? { patientName: values.name } : {}),
    });
    console.log(`added ${pair.folder} → patient ${pair.patientId} ${pair.remoteBasePath} (pair ${pair.id})`);
    return 0;
  } finally {
    await app.stop();
  }
}

async function addInbox(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { folder: { type: 'string' }, path: { type: 'string' }, rule: { type: 'string', multiple: true } }, strict: true });
  if (!values.folder) throw new UsageError('add-inbox needs --folder');
  const app = await openApp({ webhooks: false });
  try {
    const inbox = await app.inbox.addInbox({ folder: values.folder, ...(values.path ? { remoteBasePath: values.path } : {}), ...(values.rule ? { rules: values.rule } : {}) }, app.settings.get('pairs'));
    console.log(`added inbox ${inbox.folder} → <patient> ${inbox.remoteBasePath}/<case> (inbox ${inbox.id})${inbox.rules.length > 0 ? `; rules: ${inbox.rules.join(', ')}` : ''}`);
    return 0;
  } finally {
    await app.stop();
  }
}

async function cases(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { folder: { type: 'string' }, json: { type: 'boolean', default: false } }, strict: true });
  const app = await openApp({ webhooks: false });
  try {
    const inbox = app.inbox.inboxAt(values.folder);
    await app.lookAtInboxes();
    const list = app.inbox.cases(inbox.id);
    if (values.json) {
      console.log(JSON.stringify({ inbox: { id: inbox.id, folder: inbox.folder, remoteBasePath: inbox.remoteBasePath }, cases: list }, null, 2));
      return 0;
    }
    if (list.length === 0) console.log(`no case in ${inbox.folder}`);
    for (const item of list) printCase(item);
    return 0;
  } finally {
    await app.stop();
  }
}

function printCase(item: CaseView): void {
  const patient = item.patientId ? ` → ${item.patientName ?? item.patientId}${item.assignedHow ? ` (${item.assignedHow} by ${item.assignedBy})` : ''}` : '';
  console.log(`${item.state.padEnd(13)} ${item.name}  ${item.fileCount} file(s)${item.scanner ? `, ${item.scanner}` : ''}${patient}`);
  if (item.reason && item.state !== 'assigned' && item.state !== 'synced') console.log(`              ${item.reason}`);
  for (const line of item.evidence) console.log(`              evidence: ${line}`);
  for (const suggestion of item.suggestions) console.log(`              suggested: ${suggestion.name} ${suggestion.patientId}${suggestion.birthDate ? ` born ${suggestion.birthDate}` : ''}${suggestion.chart ? ` chart ${suggestion.chart}` : ''}`);
}

async function assign(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { folder: { type: 'string' }, case: { type: 'string' }, patient: { type: 'string' } }, strict: true });
  if (!values.case || !values.patient) throw new UsageError('assign needs --case and --patient (and --folder when there is more than one inbox)');
  const app = await openApp({ webhooks: false });
  try {
    const inbox = app.inbox.inboxAt(values.folder);
    await app.lookAtInboxes();
    const item = await app.inbox.assign(inbox.id, values.case, values.patient);
    console.log(`assigned ${item.name} → ${item.patientName ?? item.patientId} (${inbox.remoteBasePath}/${item.name}); a running \`run\` or the app syncs it within seconds`);
    return 0;
  } finally {
    await app.stop();
  }
}

async function config(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      concurrency: { type: 'string' },
      'settle-ms': { type: 'string' },
      'rescan-minutes': { type: 'string' },
      'recheck-minutes': { type: 'string' },
      bandwidth: { type: 'string' },
      ignore: { type: 'string', multiple: true },
    },
    strict: true,
  });
  const app = await openApp({ webhooks: false });
  try {
    const view = await app.updateSettings({
      ...(values.concurrency ? { concurrency: integer(values.concurrency, 'concurrency') } : {}),
      ...(values['settle-ms'] ? { settleMs: integer(values['settle-ms'], 'settle-ms') } : {}),
      ...(values['rescan-minutes'] ? { rescanMinutes: integer(values['rescan-minutes'], 'rescan-minutes') } : {}),
      ...(values['recheck-minutes'] ? { recheckMinutes: integer(values['recheck-minutes'], 'recheck-minutes') } : {}),
      ...(values.bandwidth ? { bandwidthLimitBytesPerSecond: integer(values.bandwidth, 'bandwidth') } : {}),
      ...(values.ignore ? { ignorePatterns: values.ignore } : {}),
    });
    console.log(JSON.stringify(view, null, 2));
    return 0;
  } finally {
    await app.stop();
  }
}

async function run(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { once: { type: 'boolean', default: false }, timeout: { type: 'string' } }, strict: true });
  const app = values.once ? await openApp({ webhooks: false }) : await openAppWhenDiskHasSpace();
  if (app.mode() === 'unconfigured') {
    await app.stop();
    throw new UsageError('not connected yet: run `patient-docs-sync connect` first');
  }
  let stopping: Promise<void> | undefined;
  const stop = () => (stopping ??= app.stop());
  const onSignal = (signal: NodeJS.Signals) => {
    console.error(`${signal}: stopping at a resumable point…`);
    void stop().then(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  app.engine.onDidSettleFile((event) => {
    if (event.type === 'file-synced') console.log(`synced   ${event.file.relativePath} → ${event.file.remotePath}/${event.file.fileName} (v${event.file.version ?? '?'})${event.file.lostAt !== null ? ', uploaded again: found missing on the server' : ''}`);
    else console.log(`failed   ${event.file.relativePath}: ${describeError(event.file)}`);
  });
  app.engine.onEngineError((message) => console.error(`problem  ${message}`));
  // `config` run next to this one: applied within seconds, said in one line (or why it was not).
  app.onSettingsFileChange((event) => (event.kind === 'applied' ? console.log(`settings ${event.message}`) : console.error(`problem  ${event.message}`)));
  await app.start();
  if ((await app.status()).secrets.clientSecretMissing) {
    // Nothing can reach the server: a --once run would only wait out its timeout.
    console.error(CLIENT_SECRET_MISSING);
    if (values.once) {
      await stop();
      return 2;
    }
  }
  if (!values.once) {
    console.log(`watching ${app.settings.get('pairs').length} folder(s) and ${app.inbox.inboxes().length} inbox(es); Ctrl+C stops`);
    await new Promise<never>(() => undefined);
  }
  const deadline = Date.now() + (values.timeout ? integer(values.timeout, 'timeout') * 1000 : 30 * 60_000);
  // Settled twice in a row, SETTLED_LOOK_MS apart: a file whose change the watcher is still looking
  // at (its event waits ~10 ms for others, then a stat) is in the stability gate by the second look.
  // From the gate on, a file is counted until it is done: settling in the gate, then its journal
  // row (written in the same turn as the gate releases it).
  let settledLooks = 0;
  while (settledLooks < 2 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, SETTLED_LOOK_MS));
    settledLooks = app.engine.isSettled() && app.inbox.manager.isSettled() ? settledLooks + 1 : 0;
  }
  const timedOut = settledLooks < 2;
  const pairs = app.engine.pairViews();
  const lines: string[] = [];
  const diskFull = app.engine.diskFullMessage;
  if (diskFull) lines.push(`disk full  ${diskFull}`);
  let notSynced = 0;
  for (const pair of pairs) {
    if (pair.folderError) lines.push(`folder not synced  ${pair.folder}: ${pair.folderError.message}`);
    const settling = app.engine.settlingCount(pair.id);
    for (const name of pair.unreadable) lines.push(`cannot be opened  ${name}: another program has it open, or this account may not read it; it is uploaded once it can be read`);
    // Files that stopped changing but could not be recorded for the full disk are not "being written".
    const heldForSpace = app.engine.heldForSpaceCount(pair.id);
    if (heldForSpace > 0) lines.push(`waiting for space  ${heldForSpace} file(s) in ${pair.folder} stopped changing but wait until this computer’s disk has space: free some, then run again`);
    const writing = settling - pair.unreadable.length - heldForSpace;
    if (writing > 0) lines.push(`still being written  ${writing} file(s) in ${pair.folder} did not stop changing`);
    notSynced += settling;
    for (const file of app.engine.fileViews(pair.id).filter((view) => view.state !== 'synced')) {
      notSynced += 1;
      lines.push(`not synced  ${file.relativePath}  [${file.state}]  ${describeError(file)}`);
    }
  }
  const waitingCases = app.inbox.cases().filter((item) => item.state === 'needs-patient' || item.state === 'conflict');
  await stop();
  if (waitingCases.length > 0) {
    for (const line of lines) console.log(line);
    for (const item of waitingCases) printCase(item);
    console.log(`${waitingCases.length} case(s) still need a patient: confirm each with \`patient-docs-sync assign --case NAME --patient UUID\` (or in the app's Inbox)`);
    return 3;
  }
  if (pairs.length === 0 && app.inbox.inboxes().length === 0) {
    console.log('no folder to sync: add one with `patient-docs-sync add-pair`');
    return 2;
  }
  if (lines.length === 0 && !timedOut) {
    console.log('every file is synced and verified');
    return 0;
  }
  for (const line of lines) console.log(line);
  if (timedOut) console.log(`stopped after the --timeout with work still under way`);
  console.log(`${notSynced} file(s) not synced${lines.some((line) => line.startsWith('folder')) ? ', and a folder could not be read' : ''}`);
  return 2;
}

/** How often `run --once` looks whether everything is settled; it ends at the second settled look in a row. */
const SETTLED_LOOK_MS = 100;

const CLIENT_SECRET_MISSING =
  'problem  the client secret is not stored on this computer any more (a damaged or lost secrets file, see above), so nothing can be uploaded. ' +
  'Run `patient-docs-sync connect` again with the secret on stdin or in PATIENT_DOCS_CLIENT_SECRET; the files wait until then.';

/**
 * `run` as a service: started on a disk too full to open the journal (SQLite cannot make its
 * shared-memory file), it says so once and tries again until there is space, instead of exiting
 * and being restarted in a loop.
 */
async function openAppWhenDiskHasSpace(): Promise<SyncApp> {
  const retryMs = Number(process.env.PATIENT_DOCS_SYNC_DISK_CHECK_MS ?? '') || 5000;
  let told = false;
  for (;;) {
    try {
      return await openApp({ webhooks: true });
    } catch (error) {
      if (!isDiskFull(error)) throw error;
      if (!told) console.error(`problem  ${PLAIN_MESSAGES.DISK_FULL} Waiting for space…`);
      told = true;
      await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
  }
}

/** Failed files, and waiting ones without their delay, are tried again (after the cause was fixed: consent, a name, the server back). */
async function retry(args: string[]): Promise<number> {
  parseArgs({ args, options: {}, strict: true });
  const { isListed } = await import('../journal/views.js');
  const app = await openApp({ webhooks: false });
  try {
    // A running `run` takes them up within seconds (it reads the same journal); else the next run does.
    const { failed, waiting } = app.engine.retryNow();
    // A scan in neither the server nor the folder has nothing to upload: said, not "no failed file".
    const lost = app.settings
      .get('pairs')
      .reduce((sum, pair) => sum + app.journal.byPair(pair.id).filter((record) => record.state === 'failed' && isListed(record) && record.errorCode !== null && isBridgeErrorCode(record.errorCode) && !canRetry(record.errorCode)).length, 0);
    if (failed + waiting + lost === 0) console.log('no failed or waiting file');
    if (lost > 0) console.log(`${lost} failed file(s) cannot be tried again: the server lost them and they are no longer in their folder; copy them back into the folder and they are uploaded by themselves`);
    if (failed > 0) console.log(`${failed} failed file(s) will be tried again at the next run (within seconds by a \`run\` already running)`);
    if (waiting > 0) console.log(`${waiting} waiting file(s) will be tried again at the next run without waiting for their retry time (within seconds by a \`run\` already running)`);
    return 0;
  } finally {
    await app.stop();
  }
}

async function status(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { json: { type: 'boolean', default: false } }, strict: true });
  // Only reads the settings and the journal: opened as the app opens them (same repairs, same
  // notices), without the engine, so monitoring that polls it stays cheap.
  const home = await openHome();
  const [{ appMode, openHomeJournal }, { buildPairView, isListed, toFileView }] = await Promise.all([import('../home/home-state.js'), import('../journal/views.js')]);
  const { journal, notices } = openHomeJournal(home.directory, home.notices);
  for (const notice of notices) console.error(`repaired: ${notice}`);
  try {
    const settings = home.settings;
    const mode = appMode(home.directory, settings);
    const progress = new ProgressTracker(Date.now);
    const pairs: Array<{ pair: PairView; files: FileView[] }> = settings.get('pairs').map((pair) => {
      const records = journal.byPair(pair.id);
      return {
        pair: buildPairView({ pair, records, progress, online: true }),
        files: records.filter(isListed).map((record) => toFileView(record, progress)),
      };
    });
    const lastRecheck = journal.lastRecheckAt();
    const recheckMinutes = settings.get('recheckMinutes') ?? RECHECK_MINUTES.default;
    if (values.json) {
      // Each file with `hint`: what to do about its failure, as the text output ends it (null when there is nothing to do).
      const withHints = pairs.map(({ pair, files }) => ({ pair, files: files.map((file) => ({ ...file, hint: cliHint(file) })) }));
      console.log(JSON.stringify({ mode, server: settings.get('serverUrl') ?? null, lastRecheckAt: lastRecheck === null ? null : new Date(lastRecheck).toISOString(), recheckMinutes, pairs: withHints }, null, 2));
      return 0;
    }
    console.log(`mode: ${mode}${settings.get('serverUrl') ? ` (${settings.get('serverUrl')})` : ''}`);
    // Synced files are checked against the server again now and then (a server that lost a scan gets it again).
    console.log(
      `synced files last checked against the server: ${lastRecheck === null ? 'not yet' : new Date(lastRecheck).toLocaleString()} (${recheckMinutes === 0 ? 'regular checks are off' : `every ${recheckMinutes} minutes`})`,
    );
    for (const { pair, files } of pairs) {
      const counts = Object.entries(pair.counts).filter(([, count]) => count > 0).map(([state, count]) => `${count} ${state}`).join(', ');
      console.log(`\n${pair.folder} → ${pair.patientName ?? pair.patientId} ${pair.remoteBasePath}  [${pair.state}] ${counts || 'no files'}`);
      for (const file of files) console.log(`  ${file.state.padEnd(9)} ${file.relativePath}${file.error ? `  — ${describeError(file)}` : ''}`);
    }
    return 0;
  } finally {
    journal.close();
  }
}

/** The reason in the app's words, and what to do about it where there is something (the app's hint, worded for the CLI). */
function describeError(file: FileView): string {
  if (!file.error) return '';
  const reason = file.error.detail ? `${file.error.message} (${file.error.detail})` : file.error.message;
  const hint = cliHint(file);
  return hint ? `${reason} ${hint}` : reason;
}

/** What to do about a failed file, worded for the CLI; null when it did not fail or there is nothing to do. */
function cliHint(file: FileView): string | null {
  return file.state === 'failed' && file.error ? failureHint(file.error.code, 1, 'cli') : null;
}

function integer(raw: string, name: string): number {
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new UsageError(`--${name} must be a whole number`);
  return value;
}

function readSecretFromStdin(): string | undefined {
  if (process.stdin.isTTY) return undefined;
  try {
    return readFileSync(0, 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}


main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    const code = (error as { code?: string }).code;
    if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
      // Not echoed: a secret typed as an argument must not land in a log or a terminal scrollback.
      console.error(`patient-docs-sync: unexpected argument (not shown; a secret is read from stdin or PATIENT_DOCS_CLIENT_SECRET, never from an argument)\n\n${USAGE}`);
      process.exit(64);
    }
    if (error instanceof UsageError || code?.startsWith('ERR_PARSE_ARGS_')) {
      console.error(`patient-docs-sync: ${(error as Error).message}\n\n${USAGE}`);
      process.exit(64);
    }
    const coded = toCodedError(error);
    console.error(`patient-docs-sync: ${coded.code === 'INTERNAL' && error instanceof Error ? error.message : coded.message}${coded.detail ? ` (${coded.detail})` : ''}`);
    process.exit(1);
  },
);
