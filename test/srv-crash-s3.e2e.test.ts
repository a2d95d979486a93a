/**
 * kill -9 of a server keeping content in an S3-compatible store (s3rver on loopback) in the moment
 * between an upload's object complete in the bucket (where the row adopts it, no copy) and the row
 * that would name it: no document claims it, and clean-up takes the object. The kill -9 with 20
 * uploads in flight runs on both backends in srv-crash.e2e.test.ts.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../server/db/sqlite/store.js';
import { createS3Client, parseStorageUrl, S3ContentStorage } from '../server/storage/s3.js';
import { clientToken, freePort, startKillableServer, type KillableServer } from './helpers/processes.js';
import { startS3, type TestS3 } from './helpers/s3.js';
import { ORG, PATIENT, tempDir } from './helpers/server.js';

const MiB = 1024 * 1024;
const children: ChildProcess[] = [];
const betweenDir = tempDir('srv-crash-s3-between');
let s3: TestS3;

beforeAll(async () => {
  s3 = await startS3();
});

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  fs.rmSync(betweenDir, { recursive: true, force: true });
  await s3?.close();
});

function start(port: number, dir: string, prefix: string): Promise<KillableServer> {
  return startKillableServer(port, { ...s3.env(prefix), PATIENT_DOCS_DATA_DIR: dir }, children);
}

async function createDocument(url: string, bearer: string, fileName: string): Promise<{ id: string; storageUrl: string }> {
  const response = await fetch(`${url}/v1/patients/${PATIENT}/documents`, {
    method: 'POST',
    headers: { authorization: `Bearer ${bearer}`, 'organization-id': ORG, 'content-type': 'application/json' },
    body: JSON.stringify({ fileName, path: '/crash-s3' }),
  });
  return (await response.json()) as { id: string; storageUrl: string };
}

describe('kill -9 between an upload complete in the bucket and its row', () => {
  it('a kill -9 after the upload is in the bucket and before its row: no document claims it, and clean-up removes it', async () => {
    const port = await freePort();
    const first = await start(port, betweenDir, 'between');
    const bearer = await clientToken(first.url);
    const document = await createDocument(first.url, bearer, 'between.bin');
    const storage = new S3ContentStorage(createS3Client(s3.endpoint), parseStorageUrl('s3://patient-docs/between'), s3.endpoint);
    const received = async (): Promise<string[]> => {
      const keys: string[] = [];
      for await (const object of storage.list('objects/received/')) keys.push(object.Key!);
      return keys;
    };
    // Another process holds the database's write lock: the upload's row waits for it (up to
    // 10 seconds) while its bytes are complete in the bucket, and the server dies then.
    const holder = new Database(path.join(betweenDir, 'patient-docs.sqlite'));
    holder.exec('BEGIN IMMEDIATE');
    try {
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(randomBytes(3 * MiB))]), 'between.bin');
      const upload = fetch(`${document.storageUrl}/file`, { method: 'POST', headers: { authorization: `Bearer ${bearer}` }, body: form }).catch(() => undefined);
      const deadline = Date.now() + 30_000;
      while ((await received()).length === 0) {
        expect(Date.now()).toBeLessThan(deadline);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await first.kill();
      await upload;
    } finally {
      holder.exec('COMMIT');
      holder.close();
    }
    expect(await received()).toHaveLength(1);

    const second = await start(port, betweenDir, 'between');
    const fresh = await clientToken(second.url);
    const got = await fetch(`${second.url}/v1/patients/${PATIENT}/documents/${document.id}`, { headers: { authorization: `Bearer ${fresh}`, 'organization-id': ORG } });
    expect(await got.json()).toMatchObject({ id: document.id, hasContent: false, sha256: null });
    // The object is young: the janitor of the instance that started leaves it to a later sweep.
    expect(await received()).toHaveLength(1);
    const stopped = new Promise((resolve) => second.child.once('exit', resolve));
    second.child.kill('SIGTERM');
    await stopped;

    const store = SqliteStore.open(path.join(betweenDir, 'patient-docs.sqlite'));
    try {
      expect(await storage.collectGarbage({ tempOlderThanMs: 0, orphanOlderThanMs: 0, isReferenced: (key) => store.content.isKeyReferenced(key) })).toEqual({ tempFiles: 1, orphanObjects: 0 });
    } finally {
      await store.close();
    }
    expect(await received()).toEqual([]);
  }, 120_000);
});
