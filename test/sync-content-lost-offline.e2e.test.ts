/**
 * The engine's re-check of synced files against a real server process. The server is down for the
 * repair (IT restores what it can, then marks the rest lost with the server stopped): the re-check
 * does not hammer a server that does not answer, and once the server is back the catch-up runs it
 * and the lost scan goes up again. A document deleted on the server is not resurrected unasked.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient } from '../electron/sync/api/api-client.js';
import { runAdmin, restartableServer, type RestartableServer } from './helpers/processes.js';
import { tempDir } from './helpers/server.js';
import { startEngine, waitFor, writeFile, type EngineUnderTest } from './helpers/sync.js';

const scratch = tempDir('sync-content-lost-offline');
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

/** Counts the re-check's searches (by ids) the engine sends. */
function countIdSearches(api: ApiClient): { count: number } {
  const counter = { count: 0 };
  const search = api.search.bind(api);
  api.search = (patientId, body, ...rest) => {
    if (body.id && body.id.length > 0 && body.hasContent === true && body.limit === 30) counter.count += 1;
    return search(patientId, body, ...rest);
  };
  return counter;
}

describe('the re-check waits for the server', () => {
  it('sends no re-check while the server is down, and re-uploads the lost scan once the catch-up finds it back', async () => {
    sync = await startEngine(servers.url, { engine: { recheckMs: 300, probeMs: 500 } });
    const searches = countIdSearches(sync.api);
    writeFile(sync.folder, 'upper.stl', `solid upper ${'x'.repeat(4000)}`);
    const synced = await waitFor('the scan to be synced', () => sync!.journal.byPair(sync!.pair.id).find((row) => row.state === 'synced'));
    await waitFor('a re-check to have found it in place', () => searches.count >= 2);

    await servers.stop();
    await waitFor('the engine to notice the server is gone', () => !sync!.engine.isOnline, 10_000);
    const whileDown = searches.count;
    // The repair, with the server stopped: its stored file is gone and marked lost.
    fs.rmSync(path.join(dataDir, 'content', 'objects', 'documents', synced.documentId!), { recursive: true });
    // The only stored file is gone, which looks like an unmounted folder: IT checked, and forces it.
    expect(await admin(['verify', '--mark-lost'])).toBe(1);
    expect(await admin(['verify', '--mark-lost', '--force'])).toBe(0);
    // Ten re-check intervals later: nothing was sent while nothing answers.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(searches.count).toBe(whileDown);
    expect(sync.journal.get(synced.id)).toMatchObject({ state: 'synced', remoteVersion: 1 });

    await servers.start();
    const again = await waitFor('the lost scan to be uploaded again', () => {
      const row = sync!.journal.get(synced.id);
      return row?.state === 'synced' && row.remoteVersion === 2 && row;
    });
    expect(again.documentId).toBe(synced.documentId);
    expect(sync.engine.isOnline).toBe(true);
  }, 60_000);
});

describe('a synced scan whose document is gone from the server', () => {
  it('is not uploaded again behind staff’s back: it fails saying why, and Retry uploads it as a new document', async () => {
    await sync?.close();
    sync = await startEngine(servers.url, { engine: { recheckMs: 300 } });
    writeFile(sync.folder, 'misfiled.stl', `solid misfiled ${'x'.repeat(4000)}`);
    writeFile(sync.folder, 'kept.stl', `solid kept ${'x'.repeat(4000)}`);
    const rows = () => sync!.journal.byPair(sync!.pair.id);
    await waitFor('both scans to be synced', () => rows().length === 2 && rows().every((row) => row.state === 'synced'));
    const misfiled = rows().find((row) => row.fileName === 'misfiled.stl')!;
    // Deleted on the server (a misfiled scan), or lost with a restore from before it existed: either way not there.
    await sync.api.json({ method: 'DELETE', url: `${servers.url}/v1/patients/${sync.pair.patientId}/documents/${misfiled.documentId}`, organization: true });

    const failed = await waitFor('the re-check to find it gone', () => {
      const row = sync!.journal.get(misfiled.id);
      return row?.state === 'failed' && row;
    });
    expect(failed.errorCode).toBe('NOT_FOUND');
    expect(failed.errorMessage).toMatch(/^This scan is no longer on the server: it was deleted there, or the server was restored from an older backup\. It is still in this folder\./);
    expect(rows().find((row) => row.fileName === 'kept.stl')).toMatchObject({ state: 'synced', remoteVersion: 1 });
    // A few more re-checks: it stays failed, nothing is created on the server.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(sync.journal.get(misfiled.id)?.state).toBe('failed');

    expect(sync.engine.retryFailed({ fileId: misfiled.id })).toBe(1);
    const again = await waitFor('Retry to upload it as a new document', () => {
      const row = sync!.journal.get(misfiled.id);
      return row?.state === 'synced' && row;
    });
    expect(again.documentId).not.toBe(misfiled.documentId);
  }, 60_000);
});
