/**
 * Wednesday: the server's disk failed and IT restored Monday's backup. Scans the workstation
 * synced since are not on the server any more (a newer version of one, another scan altogether),
 * although the workstation said "synced". Its re-check notices once the server is back: the newer
 * version goes up again by itself; the scan the restored server never heard of fails with a reason
 * (it is not resurrected unasked: deleted on the server and restored look the same from here).
 * And the webhook IT's repair sends (`document.lost`) brings the re-check forward.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdmin, restartableServer, type RestartableServer } from './helpers/processes.js';
import { tempDir } from './helpers/server.js';
import { startEngine, waitFor, writeFile, type EngineUnderTest } from './helpers/sync.js';

const scratch = tempDir('sync-content-restored');
const dataDir = path.join(scratch, 'server-data');
let servers: RestartableServer;
let sync: EngineUnderTest | undefined;

beforeAll(async () => {
  servers = await restartableServer(dataDir);
  await servers.start();
}, 60_000);

afterAll(async () => {
  await sync?.close();
  await servers?.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

async function admin(args: string[]): Promise<number | null> {
  return (await runAdmin(dataDir, args)).code;
}

describe('the server restored from an older backup', () => {
  it('a scan whose newer version the restore took is uploaded again on top of the older one; one created after the backup fails saying so', async () => {
    sync = await startEngine(servers.url, { engine: { recheckMs: 300, probeMs: 300 } });
    const rows = () => sync!.journal.byPair(sync!.pair.id);
    writeFile(sync.folder, 'upper.stl', `solid upper first ${'x'.repeat(4000)}`);
    await waitFor('the first export to be synced', () => rows().find((row) => row.fileName === 'upper.stl' && row.state === 'synced'));
    const backup = path.join(scratch, 'backup-monday');
    expect(await admin(['backup', '--to', backup])).toBe(0);

    // After the backup: the scan is exported again (version 2) and a new one arrives.
    writeFile(sync.folder, 'upper.stl', `solid upper second ${'y'.repeat(4000)}`);
    writeFile(sync.folder, 'tuesday.stl', `solid tuesday ${'z'.repeat(4000)}`);
    await waitFor('both to be synced', () => {
      const upper = rows().find((row) => row.fileName === 'upper.stl');
      return upper?.state === 'synced' && upper.remoteVersion === 2 && rows().find((row) => row.fileName === 'tuesday.stl')?.state === 'synced';
    });
    const upper = rows().find((row) => row.fileName === 'upper.stl')!;

    // Wednesday: the server's disk failed and IT restored Monday's backup.
    await servers.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.cpSync(backup, dataDir, { recursive: true });
    await servers.start();

    const settled = await waitFor('the re-check to put the newer export back and to fail the scan the restore does not know', () => {
      const now = rows();
      const again = now.find((row) => row.fileName === 'upper.stl');
      const tuesday = now.find((row) => row.fileName === 'tuesday.stl');
      return again?.state === 'synced' && again.remoteVersion === 2 && again.updatedAt > upper.updatedAt && tuesday?.state === 'failed' && now;
    });
    const again = settled.find((row) => row.fileName === 'upper.stl')!;
    expect(again.documentId).toBe(upper.documentId);
    expect(again.sha256).toBe(upper.sha256);
    expect(sync.journal.history(again.id).some((entry) => entry.event === 'queued' && /the server holds an older version \(1\) than this scan's \(2\), after a restore/.test(entry.detail ?? ''))).toBe(true);
    expect(settled.find((row) => row.fileName === 'tuesday.stl')).toMatchObject({ errorCode: 'NOT_FOUND', errorMessage: expect.stringMatching(/restored from an older backup/) });
    const served = await sync.api.getDocument(sync.pair.patientId, upper.documentId!);
    expect(served).toMatchObject({ hasContent: true, version: 2, sha256: upper.sha256 });
  }, 90_000);
});

describe('a document.lost webhook', () => {
  it('starts a re-check within seconds, long before the next interval', async () => {
    await sync?.close();
    // Checked at start, then not for an hour: only the webhook's call can bring the re-check now.
    sync = await startEngine(servers.url, { engine: { recheckMs: 60 * 60 * 1000 } });
    writeFile(sync.folder, 'lower.stl', `solid lower ${'x'.repeat(4000)}`);
    writeFile(sync.folder, 'bite.stl', `solid bite ${'x'.repeat(4000)}`);
    const rows = () => sync!.journal.byPair(sync!.pair.id);
    await waitFor('the scans to be synced', () => rows().length === 2 && rows().every((row) => row.state === 'synced'));
    const lower = rows().find((row) => row.fileName === 'lower.stl')!;
    fs.rmSync(path.join(dataDir, 'content', 'objects', 'documents', lower.documentId!), { recursive: true });
    expect(await admin(['verify', '--mark-lost'])).toBe(0);

    sync.engine.recheckSoon();
    const again = await waitFor('the lost scan to be uploaded again', () => {
      const row = sync!.journal.get(lower.id);
      return row?.state === 'synced' && row.remoteVersion === 2 && row;
    }, 20_000);
    expect(again.documentId).toBe(lower.documentId);
  }, 60_000);
});
